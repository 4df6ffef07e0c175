"""Decode throughput of every framing's client codec, next to a baseline measured in the same run.

Run with ``python -m benchmarks.bench_decode``. For each framing and message size the script
produces the server's wire bytes once (a client and a server codec pumped against each other in
memory), then times fresh clients, each with its own handshake done outside the clock, decoding
those bytes fed in 64 KiB reads, and checks they return exactly the messages sent. Throughput is
message wire bytes (framing overhead included, handshake excluded) per second.

The baseline is ``bytes.split(b"\\n")`` on each 64 KiB read of the same messages as NDJSON: one C
pass that finds every delimiter and copies every message out, keeping no state between reads.
A delimiter decoder in Python rarely beats it; a length prefix can, as it never scans the
payload. Goal (issue): length-prefixed and ndjson decode at 200 MiB/s or more on
4 KiB messages. JSON parsing is excluded everywhere.

A framing that fails to load, to produce its wire or to decode it is skipped with a note.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from reference_impl.events import Event, Message

if TYPE_CHECKING:  # the registry itself is imported late: a missing framing is a note
    from reference_impl.framing.base import ClientCodec, ServerCodec

FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")
SIZES = (64, 4096, 256 * 1024)
READ_SIZE = 64 * 1024
GOAL_MIB_S = 200.0
GOAL_FRAMINGS = ("length-prefixed", "ndjson")
GOAL_SIZE = 4096
MIB = 1024 * 1024


def payloads(size: int, total: int) -> list[Message]:
    """ASCII JSON objects of exactly ``size`` bytes, ``total`` bytes in all (at least one)."""
    messages = []
    for index in range(max(1, total // size)):
        head = b'{"i":%d,"pad":"' % index
        messages.append(Message(head + b"x" * (size - len(head) - 2) + b'"}'))
    return messages


def reads(data: bytes) -> list[bytes]:
    return [data[i : i + READ_SIZE] for i in range(0, len(data), READ_SIZE)]


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """Shortest wall time of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def baseline_mib_s(messages: Sequence[Message], repeat: int) -> float:
    """Throughput of ``bytes.split`` over the messages written as NDJSON, read by read."""
    pieces = reads(b"".join(m.data + b"\n" for m in messages))

    def run() -> None:
        for piece in pieces:
            piece.split(b"\n")

    return sum(map(len, pieces)) / best_of(repeat, run) / MIB


class SkipError(Exception):
    """A framing (or one size of it) could not be measured; the message says why."""


def registry() -> tuple[Callable[[str], ClientCodec], Callable[[str], ServerCodec]]:
    """``make_client`` and ``make_server``; SkipError if the registry does not import yet."""
    try:
        from reference_impl.framing import make_client, make_server  # noqa: PLC0415
    except ImportError as exc:
        raise SkipError(f"framing registry does not import: {exc}") from exc
    return make_client, make_server


def pump(client: ClientCodec, server: ServerCodec) -> bytes:
    """Move bytes both ways until both sides are quiet; return what the server sent."""
    sent = bytearray()
    for _ in range(100_000):
        up, down = client.data_to_send(), server.data_to_send()
        if up:
            server.receive_data(up)
        if down:
            sent += down
            client.receive_data(down)
        if not up and not down:
            return bytes(sent)
    raise SkipError("codecs did not settle")


def connect(name: str) -> tuple[ClientCodec, ServerCodec]:
    """A fresh client and server with their handshake done (keys differ per connection)."""
    make_client, make_server = registry()
    client, server = make_client(name), make_server(name)
    server.receive_data(client.initiate())
    pump(client, server)
    return client, server


def produce(name: str, messages: Sequence[Message]) -> bytes:
    """The server's wire for ``messages`` and its end, after the handshake."""
    client, server = connect(name)
    body = bytearray()
    for message in messages:
        server.send_message(message)
        body += pump(client, server)
    server.end()
    body += pump(client, server)
    return bytes(body)


def decode_seconds(name: str, body: bytes, expected: Sequence[Message], repeat: int) -> float:
    """Best time for a fresh client to decode ``body`` in 64 KiB reads (checked exact)."""
    pieces = reads(body)
    best = float("inf")
    for _ in range(repeat):
        client, _server = connect(name)  # the server only answers the handshake
        events: list[Event] = []
        start = time.perf_counter()
        for piece in pieces:
            events += client.receive_data(piece)
            client.data_to_send()  # acks and flow-control credit are part of decoding
        events += client.receive_eof()
        best = min(best, time.perf_counter() - start)
        if [e for e in events if isinstance(e, Message)] != list(expected):
            raise SkipError("decoded messages differ from the ones sent")
    return best


def measure(name: str, messages: Sequence[Message], repeat: int) -> float:
    """Decode throughput of ``name`` in MiB/s of wire bytes; SkipError says why not."""
    try:
        body = produce(name, messages)
        seconds = decode_seconds(name, body, messages, repeat)
    except SkipError:
        raise
    except Exception as exc:  # any failure of a codec under construction is a note, not a crash
        raise SkipError(f"{type(exc).__name__}: {exc}") from exc
    return len(body) / seconds / MIB


def size_label(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


def run(total_mib: float, repeat: int) -> None:
    """Measure, then print the table and the goal check."""
    print(f"decode throughput, {READ_SIZE // 1024} KiB reads, best of {repeat}, MiB/s of wire")
    print(f"{'framing':<16} {'message':>8} {'MiB/s':>9} {'x baseline':>11}")
    notes: dict[str, str] = {}
    goal: dict[str, float] = {}
    for size in SIZES:
        messages = payloads(size, int(total_mib * MIB))
        base = baseline_mib_s(messages, repeat)
        print(f"{'baseline split':<16} {size_label(size):>8} {base:>9.0f} {1:>11.2f}")
        for name in FRAMINGS:
            try:
                speed = measure(name, messages, repeat)
            except SkipError as skip:
                notes.setdefault(name, str(skip))
                print(f"{name:<16} {size_label(size):>8} {'skipped':>9}")
                continue
            if size == GOAL_SIZE:
                goal[name] = speed
            print(f"{name:<16} {size_label(size):>8} {speed:>9.0f} {speed / base:>11.2f}")
    for name, note in notes.items():
        print(f"note: {name} skipped: {note}")
    for name in GOAL_FRAMINGS:
        if name in goal:
            verdict = "met" if goal[name] >= GOAL_MIB_S else "MISSED"
            print(f"goal {name} @ 4 KiB >= {GOAL_MIB_S:.0f} MiB/s: {verdict}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mib", type=float, default=4.0, help="payload MiB per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the best counts")
    args = parser.parse_args(argv)
    run(args.mib, args.repeat)


if __name__ == "__main__":
    main()
