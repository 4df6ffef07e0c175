"""What a third-party server put on the wire, captured and read without tearline's code.

``Tap`` is a plain TCP relay in front of a server that keeps every byte the server sent, per
connection. The parsers below read such a capture with nothing but the framings' published
layouts (HTTP/1.1 chunked encoding, RFC 6455 frames, HTTP/2 frames and gRPC's 5-byte prefix,
LF-terminated lines) and return where each message lies, the way tearline's scenario format
defines a frame: frame 1 starts after the framing's setup (the response head; on gRPC the
HTTP/2 frames up to the response's HEADERS), frame k+1 where frame k ends, and a frame ends
where a consumer has the whole message (plus the CRLF closing its HTTP chunk; on gRPC the end
of the DATA frame holding the message's last byte). The tests hold tearline's live locator to
these figures.
"""

from __future__ import annotations

import contextlib
import ssl
import struct
from dataclasses import dataclass, field

import trio

LOOPBACK = "127.0.0.1"
#: a relay never runs longer than this (every traffic loop bounded in time)
TAP_LIFETIME_S = 15.0
READ_BYTES = 65536

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Parsed:
    """A capture read back: each message's bytes and its frame span."""

    messages: tuple[bytes, ...]
    spans: tuple[Span, ...]


@dataclass
class Tap:
    """A relay from a loopback port to the server at ``target``; ``captures[i]``: what the
    server sent on the i-th connection. With ``tls`` (a server and a client context) it ends
    TLS from tearline and starts TLS of its own to the server, so that what it keeps is the
    plaintext the server sent over TLS on that very connection."""

    target: int
    tls: tuple[ssl.SSLContext, ssl.SSLContext] | None = None
    captures: list[bytearray] = field(default_factory=list)

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host=LOOPBACK)
        port: int = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            task_status.started(port)
            await trio.serve_listeners(self._relay, listeners, handler_nursery=nursery)

    async def _relay(self, accepted: trio.SocketStream) -> None:
        capture = bytearray()
        self.captures.append(capture)
        with trio.move_on_after(TAP_LIFETIME_S):
            client: trio.abc.Stream = accepted
            server: trio.abc.Stream = await trio.open_tcp_stream(LOOPBACK, self.target)
            if self.tls is not None:
                serving, connecting = self.tls
                client = trio.SSLStream(accepted, serving, server_side=True)
                server = trio.SSLStream(server, connecting, server_hostname=LOOPBACK)
            try:
                async with client, server, trio.open_nursery() as nursery:
                    nursery.start_soon(_down, server, client, capture, nursery.cancel_scope)
                    nursery.start_soon(_up, client, server, nursery.cancel_scope)
            except trio.BrokenResourceError:
                pass  # a reset, or a handshake the other side broke off: the capture stands


async def _down(
    server: trio.abc.Stream, client: trio.abc.Stream, keep: bytearray, done: trio.CancelScope
) -> None:
    """The server's bytes to the client, kept; the server's end ends the relay (both sides
    closed, as the server closed)."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await server.receive_some(READ_BYTES):
            keep += data
            await client.send_all(data)
    done.cancel()


async def _up(client: trio.abc.Stream, server: trio.abc.Stream, done: trio.CancelScope) -> None:
    """The client's bytes to the server; its FIN passed on as a half-close over TCP. Over TLS
    (no half-close here) the client's close ends the relay: it wants nothing more."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await client.receive_some(READ_BYTES):
            await server.send_all(data)
        if isinstance(server, trio.SocketStream):
            await server.send_eof()
            return
    done.cancel()


# ---- the framings, read from a capture ----------------------------------------------------------


def _head_end(wire: bytes) -> int:
    end = wire.find(b"\r\n\r\n")
    assert end > 0, "no HTTP response head in the capture"
    return end + 4


def sse_chunked(wire: bytes) -> Parsed:
    """A chunked ``text/event-stream`` body whose every chunk holds one event. Every parser
    reads the whole frames of a capture that may stop short (a fault ended the connection)."""
    start = _head_end(wire)
    assert b"transfer-encoding: chunked" in wire[:start].lower()
    messages, spans = [], []
    while (line_end := wire.find(b"\r\n", start)) >= 0:
        size = int(wire[start:line_end], 16)
        end = line_end + 2 + size + 2
        if size == 0 or end > len(wire):
            break  # the last chunk, or a capture that stops inside this one
        data = wire[line_end + 2 : line_end + 2 + size]
        assert data.endswith(b"\r\n\r\n") and data.count(b"\r\n\r\n") == 1, data
        fields = [line.partition(b": ") for line in data.split(b"\r\n") if line]
        messages.append(b"\n".join(value for name, _, value in fields if name == b"data"))
        spans.append((start, end))
        start = end
    return Parsed(tuple(messages), tuple(spans))


def websocket(wire: bytes) -> Parsed:
    """Unmasked, unfragmented server frames after the 101 head, up to the close frame."""
    start = _head_end(wire)
    messages, spans = [], []
    while len(wire) - start >= 2:
        first, second = wire[start], wire[start + 1]
        opcode, size, at = first & 0x0F, second & 0x7F, start + 2
        assert second & 0x80 == 0 and first & 0x80, "a masked or fragmented server frame"
        if size == 126:
            (size,) = struct.unpack(">H", wire[at : at + 2])
            at += 2
        elif size == 127:
            (size,) = struct.unpack(">Q", wire[at : at + 8])
            at += 8
        if opcode == 0x8 or at + size > len(wire):
            break  # the close frame (no message), or a capture that stops inside this frame
        assert opcode == 0x1, f"opcode {opcode}"
        messages.append(wire[at : at + size])
        spans.append((start, at + size))
        start = at + size
    return Parsed(tuple(messages), tuple(spans))


HEADERS, DATA, CONTINUATION = 0x1, 0x0, 0x9
END_HEADERS, PADDED = 0x4, 0x8


def _http2_frames(wire: bytes) -> list[tuple[int, int, int, bytes, int]]:
    """(type, flags, stream, payload, end offset) of every whole HTTP/2 frame."""
    frames, at = [], 0
    while len(wire) - at >= 9:
        size = int.from_bytes(wire[at : at + 3], "big")
        kind, flags = wire[at + 3], wire[at + 4]
        stream = int.from_bytes(wire[at + 5 : at + 9], "big") & 0x7FFFFFFF
        if len(wire) < at + 9 + size:
            break
        frames.append((kind, flags, stream, wire[at + 9 : at + 9 + size], at + 9 + size))
        at += 9 + size
    return frames


def grpc(wire: bytes) -> Parsed:
    """A server's HTTP/2 bytes: the messages of the first response stream, 5-byte prefixed."""
    frames = _http2_frames(wire)
    first = next(i for i, f in enumerate(frames) if f[0] == HEADERS and f[2] != 0)
    stream = frames[first][2]
    head = first
    while not frames[head][1] & END_HEADERS:
        head += 1  # CONTINUATION frames complete the header block
    start = frames[head][4]
    messages, spans = [], []
    buffer = b""
    for kind, flags, number, payload, end in frames[head + 1 :]:
        if kind != DATA or number != stream:
            continue
        buffer += payload[1 : len(payload) - payload[0]] if flags & PADDED else payload
        while len(buffer) >= 5 and len(buffer) >= 5 + int.from_bytes(buffer[1:5], "big"):
            size = int.from_bytes(buffer[1:5], "big")
            assert buffer[0] == 0, "a compressed message"
            messages.append(buffer[5 : 5 + size])
            spans.append((start, end))
            start, buffer = end, buffer[5 + size :]
    return Parsed(tuple(messages), tuple(spans))


def ndjson(wire: bytes) -> Parsed:
    messages, spans, start = [], [], 0
    while (end := wire.find(b"\n", start)) >= 0:
        messages.append(wire[start:end])
        spans.append((start, end + 1))
        start = end + 1
    return Parsed(tuple(messages), tuple(spans))
