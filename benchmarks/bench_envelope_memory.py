"""Peak memory of the reference producer and consumer streaming an envelope of 10^4 and 10^7
records over loopback, and the throughput they reach.

Run with ``python -m benchmarks.bench_envelope_memory``. Seed 001 promises memory bounded by
O(C_cap x B), whatever the result's size N: here C_cap = 2 chunks of B = 50 records. The goal
(issue 10): from 10^4 to 10^7 records neither side's peak memory grows by more than 5 MiB
(``--sizes`` to choose others). Both sides keep a count and a running hash of the messages, not
a list: the consumer is told not to list them (``list_accepted=False``), as nothing judges it.

How it measures. Each side runs in a process of its own (``--role producer`` / ``--role
consumer``): the consumer reads in small pieces (``--read-bytes``, 4 KiB), so it is the slow side
and the producer's bounded channel must hold the traversal back. Each process reports its peak
resident set size (``ru_maxrss``) once the stream is over, and the same figure just before the
stream began (imports and setup done). The peak is the whole process: Python objects, the
allocator's arenas, C buffers, everything but the kernel's socket buffers. Python's own tracing
(``tracemalloc``) would see only Python allocations and slow the run several times over, so it
is not used. The growth reported is peak(10^7) - peak(10^4) per side: what the interpreter and
the imports cost cancels out.

Throughput is measured by the consumer, from its first connect to its report: records per
second and wire MiB per second (framing overhead included).
"""

from __future__ import annotations

import argparse
import json
import resource
import ssl
import subprocess
import sys
from typing import Any

import trio

from reference_impl.link.consumer_config import ConsumerConfig, ConsumerPolicy
from reference_impl.link.spec import LinkSpec
from reference_impl.payload.envelope import EnvelopeSpec
from reference_impl.peers.consumer import run_consumer
from reference_impl.peers.producer import Producer, ProducerConfig

MIB = 1024 * 1024
RECORDS = (10_000, 10_000_000)
GOAL_MIB = 5.0
C_CAP = 2
CHUNK_RECORDS = 50
FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")


def peak_rss() -> int:
    """This process's peak resident set size in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def link(framing: str, records: int) -> LinkSpec:
    return LinkSpec(framing, "envelope", envelope=EnvelopeSpec(records, CHUNK_RECORDS))


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


# --- the two roles, each in its own process --------------------------------------------------


class _OneShot(Producer):
    """A producer that serves one consumer, then says so."""

    def __init__(self, config: ProducerConfig) -> None:
        super().__init__(config)
        self.finished = trio.Event()

    async def handle(self, transport: trio.SocketStream, tls: ssl.SSLContext | None = None) -> None:
        try:
            await super().handle(transport, tls)
        finally:
            self.finished.set()


async def produce(framing: str, records: int) -> None:
    producer = _OneShot(ProducerConfig(link(framing, records), channel_capacity=C_CAP))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(producer.serve)
        before = peak_rss()
        emit(port=port)
        await producer.finished.wait()
        nursery.cancel_scope.cancel()
    (conn,) = producer.log.connections
    emit(before=before, peak=peak_rss(), sent=conn.sent.count, max_held=conn.max_held)


async def consume(framing: str, records: int, port: int, read_bytes: int) -> None:
    # consumed on its own: nothing judges the list, so the messages are counted, not listed
    config = ConsumerConfig(
        framing,
        "envelope",
        incomplete_message_timeout_s=30.0,
        idle_timeout_s=30.0,
        list_accepted=False,
    )
    before = peak_rss()
    start = trio.current_time()
    report = await run_consumer("127.0.0.1", port, ConsumerPolicy(config, read_bytes=read_bytes))
    seconds = trio.current_time() - start
    emit(
        before=before,
        peak=peak_rss(),
        verdict=report.verdict,
        accepted=report.accepted_count,
        wire_bytes=sum(c.bytes_received for c in report.connections),
        seconds=seconds,
    )


# --- the driver ------------------------------------------------------------------------------


def spawn(*args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "benchmarks.bench_envelope_memory", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def last_line(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate(timeout=3600)
    if process.returncode != 0:
        raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def measure(framing: str, records: int, read_bytes: int) -> tuple[dict[str, Any], ...]:
    """Run one stream; the producer's and the consumer's figures."""
    producer = spawn("--role", "producer", "--framing", framing, "--records", str(records))
    assert producer.stdout is not None
    port = json.loads(producer.stdout.readline())["port"]
    consumer = spawn(
        "--role", "consumer", "--framing", framing, "--records", str(records),
        "--port", str(port), "--read-bytes", str(read_bytes),
    )  # fmt: skip
    return last_line(producer), last_line(consumer)


def report(framing: str, read_bytes: int, sizes: tuple[int, int]) -> bool:
    """Measure both sizes for one framing, print a table; True if the goal was met."""
    runs = {n: measure(framing, n, read_bytes) for n in sizes}
    small, large = sizes
    print(f"\n{framing}: envelope, B={CHUNK_RECORDS}, C_cap={C_CAP}, consumer reads {read_bytes} B")
    print(f"  {'records':>9} {'side':<8} {'peak MiB':>9} {'+stream MiB':>11}  notes")
    for n, (prod, cons) in runs.items():
        rate = n / cons["seconds"]
        mib_s = cons["wire_bytes"] / cons["seconds"] / MIB
        notes = {
            "producer": f"sent {prod['sent']} messages, max_held {prod['max_held']}",
            "consumer": f"{cons['verdict']}, {cons['seconds']:.2f} s, "
            f"{rate:,.0f} records/s, {mib_s:.1f} MiB/s",
        }
        for side, fig in (("producer", prod), ("consumer", cons)):
            growth = (fig["peak"] - fig["before"]) / MIB
            print(f"  {n:>9,} {side:<8} {fig['peak'] / MIB:>9.1f} {growth:>11.1f}  {notes[side]}")
    ok = True
    for index, side in enumerate(("producer", "consumer")):
        grown = (runs[large][index]["peak"] - runs[small][index]["peak"]) / MIB
        verdict = "ok" if grown <= GOAL_MIB else "OVER GOAL"
        ok = ok and grown <= GOAL_MIB
        print(f"  {side} peak {small:,} -> {large:,} records: {grown:+.1f} MiB ({verdict})")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=("driver", "producer", "consumer"), default="driver")
    parser.add_argument("--framing", nargs="+", default=list(FRAMINGS))
    parser.add_argument("--records", type=int, default=RECORDS[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--read-bytes", type=int, default=4096)
    parser.add_argument("--sizes", type=int, nargs=2, default=list(RECORDS), help="records")
    args = parser.parse_args()
    if args.role == "producer":
        trio.run(produce, args.framing[0], args.records)
        return 0
    if args.role == "consumer":
        trio.run(consume, args.framing[0], args.records, args.port, args.read_bytes)
        return 0
    sizes = (args.sizes[0], args.sizes[1])
    results = [report(framing, args.read_bytes, sizes) for framing in args.framing]
    print(f"\ngoal (growth <= {GOAL_MIB} MiB per side): {'met' if all(results) else 'NOT met'}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
