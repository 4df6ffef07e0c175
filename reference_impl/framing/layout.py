"""Where things sit inside the bytes one message occupies on the wire, per framing.

The dry run (``reference_impl.link.spec.expected_wire``) records the span of bytes the producer's
codec wrote for each message. What lies where inside a span is framing knowledge, kept here:

- ``commit_end``: the offset at which a consumer has the whole message and hands it on. It is
  the span's end, except on a chunked HTTP body (SSE, NDJSON over HTTP): the message is
  delivered at its blank line or LF, and the chunk's closing CRLF after it is HTTP transport.
- ``length_field``: ``(offset, width)`` of the length prefix of a framing that has one
  (``length-prefixed``: a u32 at the span's start; ``grpc``: the u32 after the compressed
  flag, inside the HTTP/2 DATA frame).
"""

from __future__ import annotations

import struct

from reference_impl.framing import FramingName
from reference_impl.framing.options import FramingOptions

LENGTH_WIDTH = 4
_CHUNK_TRAILER = len(b"\r\n")


def commit_end(framing: str, options: FramingOptions, span: tuple[int, int]) -> int:
    http_body = framing in (FramingName.SSE, FramingName.NDJSON_HTTP)
    if http_body and options.sse_body == "chunked":
        return span[1] - _CHUNK_TRAILER
    return span[1]


def length_field(
    framing: str, wire: bytes, span: tuple[int, int], data: bytes
) -> tuple[int, int] | None:
    """None when the framing has no length prefix (or it is not where it should be)."""
    if framing == FramingName.LENGTH_PREFIXED:
        head = struct.pack(">I", len(data))
    elif framing == FramingName.GRPC:
        head = b"\x00" + struct.pack(">I", len(data))
    else:
        return None
    start, end = span
    found = wire.find(head + data[:16], start, end)
    if found < 0:
        return None
    return found + len(head) - LENGTH_WIDTH, LENGTH_WIDTH


DATA, HEADERS, CONTINUATION = 0x0, 0x1, 0x9


def http2_response_start(data: bytes) -> int | None:
    """Offset just past the response's first HEADERS frame (and its CONTINUATION frames) on a
    server's HTTP/2 bytes: where its first message can start, after the connection's
    SETTINGS, the response head and the like; None while ``data`` does not reach it."""
    offset, in_headers = 0, False
    while len(data) - offset >= 9:
        length = int.from_bytes(data[offset : offset + 3], "big")
        kind = data[offset + 3]
        stream = int.from_bytes(data[offset + 5 : offset + 9], "big") & 0x7FFFFFFF
        if in_headers and kind != CONTINUATION:
            return offset
        if len(data) - offset < 9 + length:
            return None  # the frame is not whole yet
        if kind == HEADERS and stream != 0:
            in_headers = True
        offset += 9 + length
    return None


#: the client connection preface of HTTP/2 (RFC 9113 §3.4)
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
END_STREAM = 0x1


def http2_request_end(data: bytes) -> int | None:
    """Offset just past the frame that ends the client's first request stream (HEADERS or
    DATA with END_STREAM, on a stream other than 0) in a client's HTTP/2 bytes; None while
    ``data`` does not reach it. A gRPC client half-closes its stream after its request."""
    if not data.startswith(HTTP2_PREFACE[: len(data)]) or len(data) < len(HTTP2_PREFACE):
        return None
    offset = len(HTTP2_PREFACE)
    while len(data) - offset >= 9:
        length = int.from_bytes(data[offset : offset + 3], "big")
        kind, flags = data[offset + 3], data[offset + 4]
        stream = int.from_bytes(data[offset + 5 : offset + 9], "big") & 0x7FFFFFFF
        end = offset + 9 + length
        if len(data) < end:
            return None
        if kind in (DATA, HEADERS) and stream != 0 and flags & END_STREAM:
            return end
        offset = end
    return None
