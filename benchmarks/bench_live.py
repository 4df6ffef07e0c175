"""What the live locator costs the fault proxy, per framing: throughput with and without it.

Run with ``python -m benchmarks.bench_live`` (defaults ``--mib 16 --rounds 3``: under a minute
on an idle machine; ``--mib 256 --rounds 5`` for steadier figures). For each framing the same
valid stream of that framing goes from a server to a client through the real ``tearline proxy``
command, in its own process, no faults, in two ways, interleaved round by round (a noisy,
shared machine hurts both alike); the table gives medians and the ratio of ``live`` to ``raw``:

- ``raw``: ``tearline proxy --upstream ...``, no ``--framing``: the copy loop, nothing decoded.
- ``framed``: ``--framing F`` and no fault: nothing needs the frames, so nothing is decoded and
  this should cost what ``raw`` costs (the issue's "the copy loop stays as fast as it is").
- ``offset split`` / ``frame split``: one ``split`` through the fault path, at a byte offset
  (no ``--framing``) or at ``{frame: 2}`` (``--framing F``): the second decodes every read of
  the producer with the framing's sans-IO codec (``harness/link/live.py``), a byte at a time
  until frame 2 is placed (line framings: a line at a time) and in bulk after, so that the
  proxy knows the frames, the messages' digests and the stream's end. Their ratio is what the
  live locator costs.

The stream is the reference producer's clean wire for ``--message-bytes`` messages (the
``messages`` payload), its frames repeated up to ``--mib`` MiB between its setup (response
head, HTTP/2 preface and HEADERS) and its end, so the codec decodes real frames all the way;
before measuring, the script decodes a short stream of each kind in-process and checks that
every message is found.

The client and server are blocking sockets in threads of this process (``bench_proxy``'s
helpers). Besides MiB/s the table gives the proxy process's CPU seconds per GiB (its start-up,
measured on an empty stream, taken off), which other load disturbs much less than wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import socket
import statistics
import sys
import tempfile
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
    from reference_impl.link.spec import LinkSpec  # noqa: PLC0415
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


def proxy(
    upstream: int, framing: str | None, faults: str | None = None
) -> contextlib.AbstractContextManager[int]:
    """``tearline proxy`` in its own process for one connection, ``--framing`` and ``--faults``
    if given."""
    argv = [sys.executable, "-m", "harness.cli", "proxy", "--listen", f"{LOOPBACK}:0"]
    argv += ["--upstream", f"{LOOPBACK}:{upstream}", "--max-connections", "1"]
    argv += ["--framing", framing] if framing else []
    argv += ["--faults", faults] if faults else []
    return running(argv, r"listening on \S+:(\d+) ")


def faults_file(folder: str, name: str, at: str) -> str:
    """A faults file of one ``split`` at position ``at`` (YAML flow text)."""
    path = os.path.join(folder, f"{name}.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"faults:\n  - {{kind: split, at: {at}}}\n")
    return path


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


#: (path, baseline it is compared with)
PAIRS = (("framed", "raw"), ("frame split", "offset split"))


def paths_for(stream: Stream, folder: str) -> dict[str, Path]:
    """The four ways through the proxy (see the module docstring)."""
    at_offset = faults_file(folder, "offset", f"{{offset: {len(stream.head) + 1}}}")
    at_frame = faults_file(folder, "frame", "{frame: 2}")
    return {
        "raw": functools.partial(proxy, framing=None),
        "framed": functools.partial(proxy, framing=stream.framing),
        "offset split": functools.partial(proxy, framing=None, faults=at_offset),
        "frame split": functools.partial(proxy, framing=stream.framing, faults=at_frame),
    }


def measure(stream: Stream, mib: float, rounds: int) -> dict[str, Figures]:
    """Every path for one framing, in interleaved rounds."""
    with tempfile.TemporaryDirectory() as folder:
        paths = paths_for(stream, folder)
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
        "interleaved rounds, MiB/s (CPU s/GiB); each pair's ratio is of its MiB/s"
    )
    names = [name for pair in PAIRS for name in pair]
    head = f"{'framing':<{WIDTH}}" + "".join(f" {name:>18}" for name in names)
    print(head + "".join(f" {a + ' / ' + b:>28}" for a, b in PAIRS))
    for stream in streams:
        got = measure(stream, mib, rounds)
        row = f"{stream.framing:<{WIDTH}}"
        row += "".join(f" {got[n].speed:>8.0f} ({got[n].cpu:>6.2f})  " for n in names)
        row += "".join(f" {got[a].speed / got[b].speed:>28.2f}" for a, b in PAIRS)
        print(row, flush=True)


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
