"""Declared splits seen as separate reads: the proxy's drain wait vs fixed pauses, under CPU load.

Run with ``python -m benchmarks.bench_split_fidelity`` (``--splits 200 --rounds 1`` for a quick
look). A producer writes ``(splits + 1) * 64`` bytes in one write; a relay in its own process
cuts them into 64-byte slices, declaring a read boundary at every multiple of 64 (``splits``
boundaries, none after the last byte); the consumer, a trio task waiting in ``receive_some``,
logs where each read ends. A boundary is *observed* when some read ends exactly on it (no read
holds bytes from both sides). The relays, in interleaved rounds:

- ``tearline slice``: the real ``tearline proxy --faults`` command with ``kind: slice,
  size_bytes: 64``. Before each slice the writer waits until the consumer has read everything
  (its Recv-Q and our SIOCOUTQ are both 0, ``harness/drain.py``).
- ``fixed pause``: the incumbent technique, toxiproxy's slicer: one write per 64-byte slice and
  a fixed 1 ms sleep after each, never looking at the consumer.
- ``tearline, no split``: the proxy without faults, the same transfer; the baseline of the
  cost per split, ``(median wall time - baseline's) / splits``.

Each runs idle and under load (one ``while True: pass`` process per core while measuring).
``--compare-tree DIR`` adds ``slice @tree``: the same slice through another checkout's proxy
(for before/after figures).

Goal (issue): 100% of declared boundaries observed by the proxy, under load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import trio

from benchmarks.bench_proxy import LOOPBACK, running, sender, serve_once, tearline

SLICE_BYTES = 64
PAUSE_S = 0.001
READ_BYTES = 65536
LOADS = ("idle", "loaded")

Relay = contextlib.AbstractContextManager[int]
Runs = dict[tuple[str, str], list[tuple[int, float]]]  # (load, relay) -> (observed, seconds)


# ---- the relays ------------------------------------------------------------------------------


def faults_file(folder: str) -> str:
    """A ``tearline proxy --faults`` file slicing the downstream stream every 64 bytes."""
    path = Path(folder) / "slice.yaml"
    path.write_text(f"faults:\n  - kind: slice\n    size_bytes: {SLICE_BYTES}\n", encoding="utf-8")
    return str(path)


def serve_fixed_pause(upstream: int) -> None:
    """The incumbent relay (run in its own process): 64-byte slices at fixed stream offsets, one
    write each, then a fixed pause; blocking sockets with TCP_NODELAY, like toxiproxy's."""
    with socket.create_server((LOOPBACK, 0)) as listener:
        print(f"listening on {LOOPBACK}:{listener.getsockname()[1]} ", file=sys.stderr, flush=True)
        client, _ = listener.accept()
    with client, socket.create_connection((LOOPBACK, upstream)) as source:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = b""
        while data := source.recv(READ_BYTES):
            pending += data
            while len(pending) >= SLICE_BYTES:
                client.sendall(pending[:SLICE_BYTES])
                pending = pending[SLICE_BYTES:]
                time.sleep(PAUSE_S)
        client.sendall(pending)
        client.shutdown(socket.SHUT_WR)
        client.recv(1)  # until the consumer closes


def fixed_pause(upstream: int) -> Relay:
    argv = [sys.executable, "-m", "benchmarks.bench_split_fidelity", "--serve-fixed-pause"]
    return running([*argv, str(upstream)], r"listening on \S+:(\d+) ")


# ---- load and the consumer -------------------------------------------------------------------


@contextlib.contextmanager
def cpu_load(on: bool) -> Iterator[None]:
    """One busy-looping process per core for the duration of the block (if ``on``)."""
    count = (os.cpu_count() or 1) if on else 0
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        if burners:
            time.sleep(0.2)  # let them start spinning before measuring
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


async def consume(port: int) -> tuple[list[int], float]:
    """Read until EOF; (the stream offset where each read ended, seconds from connect to EOF)."""
    ends: list[int] = []
    start = time.perf_counter()
    stream = await trio.open_tcp_stream(LOOPBACK, port)
    async with stream:
        while data := await stream.receive_some(READ_BYTES):
            ends.append((ends[-1] if ends else 0) + len(data))
    return ends, time.perf_counter() - start


def transfer(relay: Callable[[int], Relay], total: int) -> tuple[list[int], float]:
    """One producer -> relay -> consumer transfer of ``total`` bytes; the consumer's read ends
    and wall time."""
    upstream, producer = serve_once(sender(total))
    with relay(upstream) as port:
        ends, seconds = trio.run(consume, port)
    producer.join()
    if not ends or ends[-1] != total:
        raise RuntimeError(f"consumer got {ends[-1] if ends else 0} of {total} bytes")
    return ends, seconds


def observed(ends: Sequence[int], splits: int) -> int:
    """How many declared boundaries (multiples of 64 up to ``splits * 64``) a read ended on."""
    return sum(1 for end in set(ends) if end % SLICE_BYTES == 0 and end <= splits * SLICE_BYTES)


# ---- the table -------------------------------------------------------------------------------


def measure(splits: int, rounds: int, folder: str, compare_tree: str | None) -> Runs:
    """``{(load, relay): [(observed, seconds) per round]}``, loads and relays interleaved."""
    faults = faults_file(folder)
    relays: dict[str, Callable[[int], Relay]] = {
        "tearline slice": lambda upstream: tearline(upstream, faults=faults),
        "fixed pause": fixed_pause,
        "tearline, no split": tearline,
    }
    if compare_tree:
        relays["slice @tree"] = lambda upstream: tearline(upstream, faults=faults, cwd=compare_tree)
    total = (splits + 1) * SLICE_BYTES
    runs: Runs = {}
    for _ in range(rounds):
        for load in LOADS:
            with cpu_load(load == "loaded"):
                for name, relay in relays.items():
                    ends, seconds = transfer(relay, total)
                    runs.setdefault((load, name), []).append((observed(ends, splits), seconds))
    return runs


def median_s(runs: Runs, load: str, name: str) -> float:
    return statistics.median(seconds for _, seconds in runs[load, name])


def report(splits: int, rounds: int, compare_tree: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        runs = measure(splits, rounds, folder, compare_tree)
    cores = os.cpu_count() or 1
    print(f"{splits} declared read boundaries (64-byte slices of one {(splits + 1) * 64}-byte")
    print(f"write), {rounds} interleaved rounds; loaded = {cores} busy-looping processes")
    head = f"{'load':<7} {'relay':<19} {'observed':>9} {'worst':>7} {'wall ms':>8}"
    print(f"{head} {'us/split':>9} {'x pause':>8}")
    for (load, name), values in runs.items():
        seen = [count for count, _ in values]
        base = median_s(runs, load, "tearline, no split")
        cost = (median_s(runs, load, name) - base) / splits
        pause = (median_s(runs, load, "fixed pause") - base) / splits
        row = f"{load:<7} {name:<19} {statistics.median(seen) / splits:>9.1%}"
        row += f" {min(seen) / splits:>7.1%} {median_s(runs, load, name) * 1000:>8.1f}"
        print(f"{row} {cost * 1e6:>9.0f} {cost / pause:>8.2f}")
    worst = min(count for count, _ in runs["loaded", "tearline slice"]) / splits
    verdict = "met" if worst == 1.0 else "MISSED"
    print(f"goal tearline slice observes 100% under load, every round: {verdict} ({worst:.1%})")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--splits", type=int, default=1000, help="declared boundaries per run")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument(
        "--compare-tree",
        default=None,
        metavar="DIR",
        help="also measure the slice through the proxy of another checkout (before/after)",
    )
    parser.add_argument("--serve-fixed-pause", type=int, metavar="UPSTREAM", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_fixed_pause:
        serve_fixed_pause(args.serve_fixed_pause)
    else:
        report(args.splits, args.rounds, args.compare_tree)


if __name__ == "__main__":
    main()
