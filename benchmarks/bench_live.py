"""What the live locator costs the fault proxy, per framing: throughput with and without it.

Run with ``python -m benchmarks.bench_live`` (defaults ``--mib 16 --rounds 3``: under a minute
on an idle machine; ``--mib 256 --rounds 5`` for steadier figures). For each framing the same
valid stream of that framing goes from a server to a client through the real ``tearline proxy``
command, in its own process, no faults, in two ways, interleaved round by round (a noisy,
shared machine hurts both alike); the table gives medians and the ratio of ``live`` to ``raw``:

- ``raw``: ``tearline proxy --upstream ...``, no ``--framing``: the copy loop, nothing decoded.
- ``live``: ``tearline proxy --framing F --upstream ...``: every read of the producer's bytes
  also goes through the framing's sans-IO codec (``harness/link/live.py``), as in front of a
  service, so the proxy knows the frames, the messages' digests and the stream's end.

The stream is the reference producer's clean wire for ``--message-bytes`` messages (the
``messages`` payload), its frames repeated up to ``--mib`` MiB between its setup (response
head, HTTP/2 preface and HEADERS) and its end, so the codec decodes real frames all the way;
before measuring, the script decodes a short stream of each kind in-process and checks that
every message is found. No fault is due, so the reads are decoded in bulk: a frame-positioned
fault still ahead makes the locator decode byte by byte for its first 16 MiB, which costs far
more and is not measured here.

The client and server are blocking sockets in threads of this process (``bench_proxy``'s
helpers). Besides MiB/s the table gives the proxy process's CPU seconds per GiB (its start-up,
measured on an empty stream, taken off), which other load disturbs much less than wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import socket
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from benchmarks.bench_proxy import (
    LOOPBACK,
    MIB,
    Path,
    children_cpu_s,
    receive_all,
    running,
    serve_once,
)

FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")
#: messages in the prepared stream whose frames are repeated
PREPARED_MESSAGES = 64
WIDTH = 16
#: CPU seconds per GiB under which a ratio is noise (a few clock ticks per transfer)
MIN_CPU_S_GIB = 0.05


@dataclass(frozen=True, slots=True)
class Stream:
    """A valid stream of one framing: ``head``, then ``body`` ``repeat`` times, then ``tail``."""

    framing: str
    head: bytes
    body: bytes
    tail: bytes
    messages_per_body: int

    def times(self, mib: float) -> int:
        return max(1, int(mib * MIB) // len(self.body))

    def size(self, repeat: int) -> int:
        return len(self.head) + repeat * len(self.body) + len(self.tail)

    def chunks(self, repeat: int) -> Iterator[bytes]:
        yield self.head
        for _ in range(repeat):
            yield self.body
        yield self.tail


def prepared_stream(framing: str, message_bytes: int) -> Stream:
    """The reference producer's clean wire, cut into setup, frames and end."""
    from harness.link.prepared import prepare  # noqa: PLC0415
    from reference_impl.link import LinkSpec  # noqa: PLC0415
    from reference_impl.payload.messages import MessagesSpec  # noqa: PLC0415

    known = prepare(LinkSpec(framing, "messages", MessagesSpec(PREPARED_MESSAGES, message_bytes)))
    start, end = known.spans[0][0], known.spans[-1][1]
    wire = known.wire
    return Stream(framing, wire[:start], wire[start:end], wire[end:], len(known.spans))


def check_decodes(stream: Stream, repeat: int = 3) -> None:
    """Decode ``repeat`` bodies in-process as the proxy's live locator does: every message is
    found and the stream reaches its end (else the benchmark would time a codec that gave up)."""
    from harness.link.live import LinkTraits, LiveStream  # noqa: PLC0415

    live = LiveStream(LinkTraits(stream.framing, payload="messages"))
    for chunk in stream.chunks(repeat):
        live.observe(chunk)
    live.observe_end("eof")
    found, wanted = len(live.digests), repeat * stream.messages_per_body
    if live.error is not None or found != wanted or not live.reached_end:
        raise RuntimeError(f"{stream.framing}: {found} of {wanted} messages ({live.error})")


def streamer(stream: Stream, repeat: int) -> Callable[[socket.socket], None]:
    """A server that sends the stream, then waits for the client's close."""

    def handle(conn: socket.socket) -> None:
        for chunk in stream.chunks(repeat):
            conn.sendall(chunk)
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(65536):  # what the client sends (nothing), until it closes
            pass

    return handle


def proxy(upstream: int, framing: str | None) -> contextlib.AbstractContextManager[int]:
    """``tearline proxy`` in its own process for one connection, ``--framing`` if given."""
    argv = [sys.executable, "-m", "harness.cli", "proxy", "--listen", f"{LOOPBACK}:0"]
    argv += ["--upstream", f"{LOOPBACK}:{upstream}", "--max-connections", "1"]
    argv += ["--framing", framing] if framing else []
    return running(argv, r"listening on \S+:(\d+) ")


def transfer(path: Path, stream: Stream, repeat: int) -> tuple[float, float]:
    """(MiB/s, CPU seconds of the proxy process) of one stream through ``path``."""
    total = stream.size(repeat)
    upstream, server = serve_once(streamer(stream, repeat))
    cpu = children_cpu_s()
    with path(upstream) as port:
        received, seconds = receive_all(port)
    cpu = children_cpu_s() - cpu
    server.join()
    if received != total:
        raise RuntimeError(f"{stream.framing}: received {received} of {total} bytes")
    return total / seconds / MIB, cpu


@dataclass
class Figures:
    """One path's runs: MiB/s and CPU seconds per GiB (start-up off) of each round."""

    mib_s: list[float]
    cpu_s_gib: list[float]

    @property
    def speed(self) -> float:
        return statistics.median(self.mib_s)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpu_s_gib)


def measure(stream: Stream, mib: float, rounds: int) -> dict[str, Figures]:
    """``raw`` and ``live`` for one framing, in interleaved rounds."""
    paths: dict[str, Path] = {
        "raw": functools.partial(proxy, framing=None),
        "live": functools.partial(proxy, framing=stream.framing),
    }
    repeat = stream.times(mib)
    gib = stream.size(repeat) / (1024 * MIB)
    # start-up and an empty stream (also a warm-up): not the relay's cost per byte
    idle = {name: transfer(path, stream, 0)[1] for name, path in paths.items()}
    figures = {name: Figures([], []) for name in paths}
    for _ in range(rounds):
        for name, path in paths.items():
            mib_s, cpu_s = transfer(path, stream, repeat)
            figures[name].mib_s.append(mib_s)
            figures[name].cpu_s_gib.append(max(cpu_s - idle[name], 0.0) / gib)
    return figures


def report(mib: float, rounds: int, message_bytes: int, framings: Sequence[str]) -> None:
    streams = [prepared_stream(framing, message_bytes) for framing in framings]
    for stream in streams:
        check_decodes(stream)
    print(
        f"pass-through of {mib:g} MiB of {message_bytes}-byte messages, median of {rounds} "
        "interleaved rounds; live = --framing F (decoded), raw = no --framing (copied)"
    )
    head = f"{'framing':<{WIDTH}} {'raw MiB/s':>10} {'live MiB/s':>11} {'x raw':>7}"
    print(f"{head} {'raw CPU s/GiB':>14} {'live CPU s/GiB':>15} {'x raw':>7}   live runs (MiB/s)")
    for stream in streams:
        got = measure(stream, mib, rounds)
        raw, live = got["raw"], got["live"]
        # below the clock's resolution (10 ms a tick) the copy loop's CPU is no divisor
        cpu_ratio = f"{live.cpu / raw.cpu:.2f}" if raw.cpu >= MIN_CPU_S_GIB else "-"
        row = f"{stream.framing:<{WIDTH}} {raw.speed:>10.0f} {live.speed:>11.0f}"
        row += f" {live.speed / raw.speed:>7.2f} {raw.cpu:>14.2f} {live.cpu:>15.2f}"
        runs = " ".join(f"{v:.0f}" for v in live.mib_s)
        print(f"{row} {cpu_ratio:>7}   {runs}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mib", type=float, default=16.0, help="MiB per transfer")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per path")
    parser.add_argument("--message-bytes", type=int, default=1024, help="size of each message")
    parser.add_argument(
        "--framing", action="append", choices=FRAMINGS, help="only these framings (repeatable)"
    )
    args = parser.parse_args(argv)
    report(args.mib, args.rounds, args.message_bytes, args.framing or FRAMINGS)


if __name__ == "__main__":
    main()
