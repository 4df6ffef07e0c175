"""Pass-through cost of the fault proxy: throughput and round-trip time, next to socat and direct.

Run with ``python -m benchmarks.bench_proxy`` (``--mib 64 --rounds 3`` for a quick look). Three
paths carry the same traffic, in interleaved rounds so that a noisy, shared machine hurts them
alike; the table gives medians:

- ``direct``: the client connects to the server itself (the ceiling).
- ``socat``: ``socat TCP-LISTEN:0,bind=127.0.0.1,reuseaddr TCP:127.0.0.1:<server>`` (the
  baseline; ``-d -d`` only so it prints the port it listens on).
- ``tearline``: the real command, ``python -m harness.cli proxy --listen 127.0.0.1:0
  --upstream 127.0.0.1:<server> --max-connections 1``, in its own process, no faults.
- ``tearline api`` and ``toxiproxy``: a proxy made through the Toxiproxy API of
  ``tearline proxy --api`` and of ``../shared/anchors/toxiproxy/toxiproxy-server`` (left out
  when it is absent), no toxic, each started pinned with ``taskset``.

(a) Throughput: the server sends ``--mib`` MiB and closes; the client reads until EOF. Both ends
are blocking sockets in threads moving 4 MiB per call (they release the GIL), so they are not
the bottleneck. Besides MiB/s it gives the relay process's CPU seconds per GiB (its start-up,
measured on an empty transfer, taken off), which other load disturbs much less.

(b) Round trip: a 100-byte ping-pong against an echo server, ``--trips`` trips per round (the
first 50 of each connection are warm-up and not counted), in three placements:

- ``any core``: the scheduler decides. On 2 cores socat then lands on the client's core or not,
  and its round trip is bimodal (about 14 or 55-95 us), so this row is the noisiest.
- ``one core``: client, echo server and relay pinned to CPU 0: a round trip costs CPU time and
  no cross-core wake-up, so this row compares the relays' own cost per message.
- ``two cores``: client and echo server on CPU 0, the relay on CPU 1: every hop wakes a process
  on the other core, as in a deployment where the relay has a core to itself.

``--compare-tree DIR`` adds the proxy of another checkout (for before/after figures).

Goals (issues 3 and 10): throughput >= 1.0 x socat; median round trip <= 1.3 x socat's and no
slower than Toxiproxy's, on one and on two cores.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass

from benchmarks.bench_proxy_api import ROOT, TOXIPROXY, Api, free_port, proxy, wait_port

MIB = 1024 * 1024
BLOCK = 4 * MIB
PING_BYTES = 100
WARMUP_TRIPS = 50
START_TIMEOUT_S = 10.0
THROUGHPUT_GOAL = 1.0  # x socat
RTT_GOAL = 1.3  # x socat's median
LOOPBACK = "127.0.0.1"
WIDTH = 13  # of the path column

#: A path from a client to a server: given the server's port, yields the port to connect to.
Path = Callable[[int], contextlib.AbstractContextManager[int]]


# ---- the two ends: blocking sockets in threads ------------------------------------------------


def serve_once(handle: Callable[[socket.socket], None]) -> tuple[int, threading.Thread]:
    """Listen on a loopback port; a thread accepts one connection and runs ``handle`` on it."""
    listener = socket.create_server((LOOPBACK, 0))
    port = int(listener.getsockname()[1])

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
        with conn:
            handle(conn)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return port, thread


def sender(total: int) -> Callable[[socket.socket], None]:
    """A server that sends ``total`` bytes in 4 MiB calls, then closes."""
    block = memoryview(b"\x5a" * BLOCK)

    def handle(conn: socket.socket) -> None:
        left = total
        while left > 0:
            conn.sendall(block[: min(left, BLOCK)])
            left -= BLOCK
        conn.shutdown(socket.SHUT_WR)
        conn.recv(1)  # wait for the client's close, so the proxy ends both legs cleanly

    return handle


def echo(conn: socket.socket) -> None:
    """A server that sends back whatever it receives, until EOF."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while data := conn.recv(65536):
        conn.sendall(data)


def receive_all(port: int) -> tuple[int, float]:
    """Connect, read until EOF; (bytes, seconds from connect to EOF)."""
    buffer = memoryview(bytearray(BLOCK))
    received = 0
    start = time.perf_counter()
    with socket.create_connection((LOOPBACK, port)) as conn:
        while count := conn.recv_into(buffer):
            received += count
        elapsed = time.perf_counter() - start
    return received, elapsed


def ping_pong(port: int, trips: int) -> list[float]:
    """Round-trip times (seconds) of ``trips`` 100-byte pings, after a warm-up."""
    ping = b"p" * PING_BYTES
    times: list[float] = []
    with socket.create_connection((LOOPBACK, port)) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for trip in range(WARMUP_TRIPS + trips):
            start = time.perf_counter()
            conn.sendall(ping)
            got = 0
            while got < PING_BYTES:
                got += len(conn.recv(PING_BYTES - got))
            if trip >= WARMUP_TRIPS:
                times.append(time.perf_counter() - start)
    return times


# ---- the paths -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    """Which CPUs this process (client and servers) and the relay process may run on."""

    name: str
    ends: frozenset[int] | None = None  # None: all of them
    relay: frozenset[int] | None = None


ANY_CORE = Placement("any core")
PLACEMENTS = (
    ANY_CORE,
    Placement("one core", frozenset({0}), frozenset({0})),
    Placement("two cores", frozenset({0}), frozenset({1})),
)


@contextlib.contextmanager
def placed(placement: Placement) -> Iterator[None]:
    """Pin this thread (and so the server threads it starts) for the duration of the block."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, placement.ends or before)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def direct(upstream: int) -> Iterator[int]:
    yield upstream


def _started(
    argv: Sequence[str], pattern: str, cwd: str | None
) -> tuple[subprocess.Popen[str], int]:
    """Start ``argv``; the port from the first stderr line matching ``pattern`` (group 1).

    Later stderr is drained by a thread so a chatty process never blocks on a full pipe.
    """
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=cwd)
    assert process.stderr is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    said: list[str] = []
    for line in process.stderr:
        if found := re.search(pattern, line):
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, int(found[1])
        said.append(line)
        if time.monotonic() > deadline:
            break
    process.kill()
    tail = "".join(said[-5:])
    raise RuntimeError(f"did not report its port: {' '.join(argv)}\n{tail}")


@contextlib.contextmanager
def running(
    argv: Sequence[str], pattern: str, *, cwd: str | None = None, cpus: Set[int] | None = None
) -> Iterator[int]:
    """A relay process for the duration of the block (on ``cpus``); yields its port."""
    process, port = _started(argv, pattern, cwd)
    if cpus is not None:
        os.sched_setaffinity(process.pid, cpus)
    try:
        yield port
    finally:
        try:
            process.wait(timeout=2.0)  # both relays exit by themselves after the one connection
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait()


def tearline(
    upstream: int,
    *,
    faults: str | None = None,
    cwd: str | None = None,
    cpus: Set[int] | None = None,
) -> contextlib.AbstractContextManager[int]:
    """The real ``tearline proxy`` command, in its own process, for one connection (of the
    checkout in ``cwd``, default this one)."""
    argv = [sys.executable, "-m", "harness.cli", "proxy", "--listen", f"{LOOPBACK}:0"]
    argv += ["--upstream", f"{LOOPBACK}:{upstream}", "--max-connections", "1"]
    argv += ["--faults", faults] if faults else []
    return running(argv, r"listening on \S+:(\d+) ", cwd=cwd, cpus=cpus)


def socat(upstream: int, *, cpus: Set[int] | None = None) -> contextlib.AbstractContextManager[int]:
    listen = f"TCP-LISTEN:0,bind={LOOPBACK},reuseaddr"
    argv = ["socat", "-d", "-d", listen, f"TCP:{LOOPBACK}:{upstream}"]
    return running(argv, r"listening on AF=2 \S+:(\d+)", cpus=cpus)


@contextlib.contextmanager
def through_api(kind: str, upstream: int, *, cpus: Set[int] | None = None) -> Iterator[int]:
    """A proxy to ``upstream`` made through a Toxiproxy API, no toxic: ``tearline api``
    (``tearline proxy --api``) or ``toxiproxy`` (``toxiproxy-server``); yields its port. Pinned
    from its start with ``taskset`` (Go starts its threads before anyone could pin them)."""
    port = free_port()
    if kind == "toxiproxy":
        argv = [str(TOXIPROXY), "-host", LOOPBACK, "-port", str(port)]
    else:
        argv = [sys.executable, "-m", "harness.cli", "proxy", "--api", f"{LOOPBACK}:{port}"]
    pin = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] if cpus else []
    process = subprocess.Popen(
        pin + argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_port(port)
        yield proxy(Api(port), "bench", upstream)
    finally:
        process.terminate()
        process.wait(10)


def make_paths(placement: Placement, compare_tree: str | None) -> dict[str, Path]:
    """The paths to measure, their relays on ``placement.relay``."""
    cpus = placement.relay
    paths: dict[str, Path] = {
        "direct": direct,
        "socat": functools.partial(socat, cpus=cpus),
        "tearline": functools.partial(tearline, cpus=cpus),
    }
    paths["tearline api"] = functools.partial(through_api, "tearline api", cpus=cpus)
    if TOXIPROXY.exists():  # (optional: the benchmark runs without it)
        paths["toxiproxy"] = functools.partial(through_api, "toxiproxy", cpus=cpus)
    if compare_tree:
        paths["tearline@tree"] = functools.partial(tearline, cwd=compare_tree, cpus=cpus)
    return paths


# ---- measurements ----------------------------------------------------------------------------


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def throughput_once(path: Path, total: int) -> tuple[float, float]:
    """(MiB/s, CPU seconds of the path's process) of one ``total``-byte transfer.

    The CPU time is that of the waited-for helper process (0 for ``direct``): it is much less
    sensitive than wall time to other load on a shared machine.
    """
    upstream, server = serve_once(sender(total))
    cpu = children_cpu_s()
    with path(upstream) as port:
        received, seconds = receive_all(port)
    cpu = children_cpu_s() - cpu
    server.join()
    if received != total:
        raise RuntimeError(f"received {received} of {total} bytes")
    return total / seconds / MIB, cpu


def startup_cpu_s(path: Path) -> float:
    """CPU seconds of the path's process for start-up and one empty transfer."""
    upstream, server = serve_once(sender(0))
    cpu = children_cpu_s()
    with path(upstream) as port:
        receive_all(port)
    server.join()
    return children_cpu_s() - cpu


def rtt_once(path: Path, trips: int) -> list[float]:
    upstream, server = serve_once(echo)
    with path(upstream) as port:
        times = ping_pong(port, trips)
    server.join()
    return times


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report_throughput(mib: float, rounds: int, paths: dict[str, Path]) -> float:
    """Measure and print (a); return the proxy's ratio to socat."""
    runs: dict[str, list[float]] = {name: [] for name in paths}
    cpus: dict[str, list[float]] = {name: [] for name in paths}
    # The CPU of start-up and of an empty connection (also a warm-up) is not the relay's.
    idle_s = {name: startup_cpu_s(path) for name, path in paths.items()}
    gib = mib / 1024
    for _ in range(rounds):
        for name, path in paths.items():
            mib_s, cpu_s = throughput_once(path, int(mib * MIB))
            runs[name].append(mib_s)
            cpus[name].append(max(cpu_s - idle_s[name], 0.0) / gib)
    speed = {name: statistics.median(values) for name, values in runs.items()}
    print(f"(a) one-way throughput, {mib:g} MiB, median of {rounds} interleaved rounds")
    head = f"{'path':<{WIDTH}} {'MiB/s':>8} {'x socat':>8} {'x direct':>9} {'CPU s/GiB':>10}"
    print(f"{head}   all runs (MiB/s)")
    for name, value in speed.items():
        every = " ".join(f"{v:.0f}" for v in runs[name])
        ratio_socat, ratio_direct = value / speed["socat"], value / speed["direct"]
        cpu = statistics.median(cpus[name])
        row = f"{name:<{WIDTH}} {value:>8.0f} {ratio_socat:>8.2f} {ratio_direct:>9.2f} {cpu:>10.2f}"
        print(f"{row}   {every}")
    ratio = speed["tearline"] / speed["socat"]
    verdict = "met" if ratio >= THROUGHPUT_GOAL else "MISSED"
    print(f"goal tearline >= {THROUGHPUT_GOAL:.1f} x socat: {verdict} ({ratio:.2f} x)\n")
    return ratio


def report_rtt(trips: int, rounds: int, compare_tree: str | None) -> dict[str, float]:
    """Measure and print (b); return the proxy's median ratio to socat's, per placement."""
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for placement in PLACEMENTS:
            with placed(placement):
                for name, path in make_paths(placement, compare_tree).items():
                    key = placement.name, name
                    samples[key] = samples.get(key, []) + rtt_once(path, trips)
    median = {key: statistics.median(values) for key, values in samples.items()}
    print(f"(b) {PING_BYTES}-byte ping-pong, {trips} round trips x {rounds} interleaved rounds")
    print(f"{'placement':<10} {'path':<{WIDTH}} {'median us':>10} {'p99 us':>8} {'x socat':>8}")
    for (where, name), values in samples.items():
        p99 = percentile(values, 0.99) * 1e6
        ratio = median[where, name] / median[where, "socat"]
        us = median[where, name] * 1e6
        print(f"{where:<10} {name:<{WIDTH}} {us:>10.1f} {p99:>8.1f} {ratio:>8.2f}")
    ratios = {p.name: median[p.name, "tearline"] / median[p.name, "socat"] for p in PLACEMENTS}
    for where, ratio in ratios.items():
        verdict = "met" if ratio <= RTT_GOAL else "MISSED"
        print(f"goal tearline median <= {RTT_GOAL:.1f} x socat, {where}: {verdict} ({ratio:.2f} x)")
    for where in ratios:
        if (where, "toxiproxy") not in median:
            continue
        for name in ("tearline", "tearline api"):
            ratio = median[where, name] / median[where, "toxiproxy"]
            verdict = "met" if ratio <= 1.0 else "MISSED"
            print(f"goal {name} median <= toxiproxy's, {where}: {verdict} ({ratio:.2f} x)")
    return ratios


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mib", type=float, default=1024.0, help="MiB per transfer (a)")
    parser.add_argument("--trips", type=int, default=2000, help="round trips per round (b)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per path")
    parser.add_argument("--only", choices=("throughput", "rtt"), default=None)
    parser.add_argument(
        "--compare-tree",
        default=None,
        metavar="DIR",
        help="also measure the tearline proxy of another checkout (before/after a change)",
    )
    args = parser.parse_args(argv)
    if args.only != "rtt":
        report_throughput(args.mib, args.rounds, make_paths(ANY_CORE, args.compare_tree))
    if args.only != "throughput":
        report_rtt(args.trips, args.rounds, args.compare_tree)


if __name__ == "__main__":
    main()
