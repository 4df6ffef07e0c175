"""Correct message splitting for the two framings the socket-level consumers speak.

``take_messages`` takes every whole message off the front of a buffer: an LF-terminated line
(ndjson; a CR before the LF is dropped, blank lines carry nothing) or a u32 big-endian length
and that many bytes (length-prefixed; a declared length above the 16 MiB default maximum is
refused). The broken consumers that use it have their bug elsewhere.
"""

from __future__ import annotations

import struct

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.framing.options import DEFAULT_MAX_MESSAGE_BYTES

SOCKET_FRAMINGS = ("ndjson", "length-prefixed")
_HEADER = struct.Struct(">I")


def _one(buffer: bytearray, framing: str) -> tuple[bytes, int] | None:
    """The first whole message and the bytes it used, or None if it is not all there."""
    if framing == "ndjson":
        line_end = buffer.find(b"\n")
        if line_end < 0:
            return None
        return bytes(buffer[:line_end]).removesuffix(b"\r"), line_end + 1
    if len(buffer) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack_from(buffer)
    if size > DEFAULT_MAX_MESSAGE_BYTES:
        raise CodecError(ErrorCode.FRAME_TOO_LARGE, f"declared {size} bytes")
    if len(buffer) < _HEADER.size + size:
        return None
    return bytes(buffer[_HEADER.size : _HEADER.size + size]), _HEADER.size + size


def take_messages(buffer: bytearray, framing: str) -> list[bytes]:
    """Remove and return every whole message at the front of ``buffer``."""
    out: list[bytes] = []
    while (found := _one(buffer, framing)) is not None:
        message, used = found
        del buffer[:used]
        if message or framing != "ndjson":  # a blank line is no message
            out.append(message)
    return out
