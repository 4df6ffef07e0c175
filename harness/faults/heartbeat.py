"""Heartbeats a stall writes while the stream is silent, framed for the link they are written on.

A heartbeat is not the producer's data, but it must be a valid unit of the framing, or the
consumer sees a protocol error instead of a keep-alive: an SSE comment line (on a chunked body, an
HTTP chunk of its own); a WebSocket heartbeat is a ping frame (masked when the client sends
it, RFC 6455 section 5.3); a gRPC heartbeat is an HTTP/2 PING frame on stream 0.
"""

from __future__ import annotations

import struct
from typing import Literal

from harness.errors import FieldError
from harness.faults.stage import StageContext

HeartbeatKind = Literal["sse-comment", "websocket-ping", "grpc-ping", "raw"]
#: the framing each kind belongs to (``raw`` is written as it is, on any framing)
FRAMING_OF: dict[str, str | None] = {
    "sse-comment": "sse",
    "websocket-ping": "websocket",
    "grpc-ping": "grpc",
    "raw": None,
}
#: the heartbeats a framing has of its own
FRAMED_KINDS: tuple[HeartbeatKind, ...] = ("sse-comment", "websocket-ping", "grpc-ping")
#: RFC 6455 5.5: control frames carry at most 125 payload bytes
MAX_PING_PAYLOAD = 125
#: the masking key of pings the proxy sends as a client (any key is valid; fixed, so the bytes
#: of a case are the same on every run)
_MASK = b"\x37\xfa\x21\x3d"


def framing_heartbeat(framing: str | None) -> HeartbeatKind | None:
    """The heartbeat ``framing`` has of its own (None: none, or no framing known)."""
    return next((kind for kind in FRAMED_KINDS if FRAMING_OF[kind] == framing), None)


def check_heartbeat(kind: HeartbeatKind | None, text: str | None) -> None:
    """The rules between ``heartbeat`` and ``heartbeat_text``."""
    if kind is None and text is not None:
        raise FieldError(
            "needs heartbeat (sse-comment, websocket-ping, grpc-ping or raw)",
            path=("heartbeat_text",),
        )
    if kind == "raw" and text is None:
        raise FieldError("a raw heartbeat needs heartbeat_text", path=("heartbeat",))
    if kind == "grpc-ping" and text is not None:
        raise FieldError("a gRPC PING carries 8 fixed bytes, no text", path=("heartbeat_text",))
    payload = (text or "").encode()
    if kind == "websocket-ping" and len(payload) > MAX_PING_PAYLOAD:
        raise FieldError(
            f"a ping carries at most {MAX_PING_PAYLOAD} bytes (got {len(payload)})",
            path=("heartbeat_text",),
        )
    if kind == "sse-comment" and ("\n" in (text or "") or "\r" in (text or "")):
        raise FieldError("one comment line: no CR or LF", path=("heartbeat_text",))


def heartbeat_problem(kind: HeartbeatKind | None, framing: str) -> str | None:
    """Why a heartbeat of ``kind`` cannot go on ``framing``, or None."""
    wanted = FRAMING_OF.get(kind or "raw")
    if wanted is None or wanted == framing:
        return None
    return f"a {kind} heartbeat needs framing {wanted} (this link is {framing})"


def heartbeat_bytes(kind: HeartbeatKind, text: str | None, ctx: StageContext) -> bytes:
    """The bytes of one heartbeat on the link and in the direction of ``ctx``."""
    if kind == "sse-comment":
        return sse_comment(text or "ping", ctx.shape.sse_chunked)
    if kind == "websocket-ping":
        return websocket_ping((text or "").encode(), masked=ctx.direction == "upstream")
    if kind == "grpc-ping":
        return http2_ping()
    return (text or "").encode()


def sse_comment(text: str, chunked: bool) -> bytes:
    """One comment line ``: text``, as one HTTP chunk on a chunked body. No blank line after
    it: inside an event a blank line would dispatch the partial event; a lone comment line is
    valid anywhere in the stream and never an event (WHATWG HTML 9.2.6)."""
    comment = f": {text}\n".encode()
    return b"%x\r\n%s\r\n" % (len(comment), comment) if chunked else comment


def websocket_ping(payload: bytes, *, masked: bool) -> bytes:
    """A final ping frame (opcode 0x9); a client's frames are masked."""
    if not masked:
        return bytes([0x89, len(payload)]) + payload
    body = bytes(b ^ _MASK[i % 4] for i, b in enumerate(payload))
    return bytes([0x89, 0x80 | len(payload)]) + _MASK + body


def http2_ping() -> bytes:
    """An HTTP/2 PING frame (type 0x6) on stream 0 with 8 bytes of opaque data."""
    return struct.pack(">I", 8)[1:] + b"\x06\x00" + struct.pack(">I", 0) + b"tearline"
