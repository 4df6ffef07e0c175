"""How late a latency fault's bytes arrive, against the best a relay on this machine can do.

Run with ``python -m benchmarks.bench_timer [--trips 300 --rounds 3]``.

A 10 ms latency through ``tearline proxy`` takes 10.2-10.3 ms per round trip where the
pass-through takes 0.05 (Toxiproxy's takes 10.4: ``bench_faults.py``). Is the rest tearline's
timer, or the machine? Each variant relays 100-byte pings from one TCP connection to another
in a thread of this process, holding each for ``delay`` after its read, and the client
measures how much later than ``delay`` each ping arrives:

- ``spin`` (the baseline): reads, spins on the clock until the ping is due, writes; the best a
  thread can do (it burns a core for the whole delay);
- ``sleep``: the same with ``time.sleep`` until due (what a naive relay does);
- ``tearline``: ``ThreadChain`` (``harness/proxy/threadchain.py``) with a ``latency`` stage, as a
  long-running proxy's leg runs it: ``poll(2)``, then a precise sleep, then yields.

The client sends each ping as soon as the last arrived, so it has waited ``delay`` in ``recv``
each time: what a machine adds to waking a thread after it idled (a VM's idle vCPU most) is in
every variant, baseline included. The figures: the median and the 10th-90th percentiles of
the lateness, and tearline's median minus the baseline's.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import select
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from harness.evidence.timeline import Leg
from harness.faults.latency import Latency
from harness.faults.stage import Chain, StageContext
from harness.link.live import LinkTraits, LiveStream
from harness.proxy.threadchain import ThreadChain

PING = b"p" * 100
LOOPBACK = "127.0.0.1"
DELAYS_MS = (1.0, 10.0)
VARIANTS = ("spin", "sleep", "tearline")

Pair = tuple[socket.socket, socket.socket]


def tcp_pair() -> Pair:
    """Two ends of one loopback TCP connection, Nagle off (as the proxy's are)."""
    with socket.create_server((LOOPBACK, 0)) as listener:
        near = socket.create_connection(listener.getsockname())
        far, _ = listener.accept()
    for end in (near, far):
        end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return near, far


def bare_relay(src: int, dst: int, delay_s: float, spin: bool) -> None:
    """Read, hold until due (spinning, or ``time.sleep``), write; until the source ends."""
    readable = select.poll()
    readable.register(src, select.POLLIN)
    buffer = bytearray(65536)
    while True:
        readable.poll()
        size = os.readv(src, (buffer,))
        due = time.perf_counter() + delay_s
        if not size:
            return
        if spin:
            while time.perf_counter() < due:
                pass
        else:
            time.sleep(max(0.0, due - time.perf_counter()))
        os.write(dst, memoryview(buffer)[:size])


class _NoRecords:
    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None:
        pass


def tearline_relay(src: int, dst: int, delay_s: float) -> Callable[[], object]:
    """A ``ThreadChain`` with one latency stage; returns its loop (``stop`` ends it)."""
    ctx = StageContext(
        direction="downstream",
        locator=LiveStream(LinkTraits()),
        recorder=_NoRecords(),
        rng=random.Random(0),
    )
    chain = Chain([Latency(delay_ms=delay_s * 1000).stage(ctx)])
    counters = ({"downstream": 0}, "downstream", Leg(1, "downstream"))
    return ThreadChain((src, dst), 65536, counters, chain, time.perf_counter).run


@contextmanager
def relayed(variant: str, delay_s: float) -> Iterator[Pair]:
    """A relay thread of ``variant`` between two connections; yields (client's sending end,
    client's receiving end)."""
    send, relay_src = tcp_pair()
    relay_dst, receive = tcp_pair()
    src, dst = relay_src.fileno(), relay_dst.fileno()
    if variant == "tearline":
        relay_src.setblocking(False)
        relay_dst.setblocking(False)
        loop = tearline_relay(src, dst, delay_s)
    else:
        loop = functools.partial(bare_relay, src, dst, delay_s, variant == "spin")

    thread = threading.Thread(target=loop, name=f"relay-{variant}")
    thread.start()
    try:
        yield send, receive
    finally:
        send.shutdown(socket.SHUT_WR)  # the relay reads its end and returns
        thread.join(timeout=10)
        for end in (send, relay_src, relay_dst, receive):
            end.close()


def lateness_us(variant: str, delay_s: float, trips: int) -> list[float]:
    """How much later than ``delay_s`` each of ``trips`` pings arrived (after 20 warm-ups)."""
    late: list[float] = []
    with relayed(variant, delay_s) as (send, receive):
        for trip in range(20 + trips):
            start = time.perf_counter()
            send.sendall(PING)
            got = 0
            while got < len(PING):
                got += len(receive.recv(len(PING) - got))
            if trip >= 20:
                late.append((time.perf_counter() - start - delay_s) * 1e6)
    return late


def spread(values: Sequence[float]) -> str:
    ordered = sorted(values)
    tenth, ninetieth = ordered[len(ordered) // 10], ordered[len(ordered) * 9 // 10]
    return f"{statistics.median(ordered):7.0f}   ({tenth:5.0f} - {ninetieth:5.0f})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=300, help="pings per variant and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args(argv)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, {args.rounds} x {args.trips} pings per variant"
    )
    late: dict[tuple[float, str], list[float]] = {}
    for _ in range(args.rounds):
        for delay_ms in DELAYS_MS:
            for variant in VARIANTS:
                values = lateness_us(variant, delay_ms / 1000, args.trips)
                late.setdefault((delay_ms, variant), []).extend(values)
    print("lateness after the delay, us: median   (10th - 90th percentile)")
    for delay_ms in DELAYS_MS:
        for variant in VARIANTS:
            print(f"  {delay_ms:4.0f} ms  {variant:9} {spread(late[delay_ms, variant])}")
        ours = statistics.median(late[delay_ms, "tearline"])
        best = statistics.median(late[delay_ms, "spin"])
        print(
            f"  {delay_ms:4.0f} ms  tearline - spin: {ours - best:+.0f} us "
            f"({ours / best:.2f} x the baseline)"
        )
    print(f"load at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
