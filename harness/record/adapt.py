"""What a replay changes in the recorded bytes so that a live client takes them (pure).

One thing only: the WebSocket handshake. The client's ``Sec-WebSocket-Key`` is random per
connection and the server's ``Sec-WebSocket-Accept`` is derived from it (RFC 6455 section
4.2.2), so the recorded accept token fits only the recorded request. The replay puts the token
of the live request in its place; it is always 28 characters (base64 of a SHA-1), so no byte
moves and every offset of the recording holds. Everything else is replayed verbatim.
"""

from __future__ import annotations

import base64
import hashlib
import re

from harness.record.schedule import Write

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: how far into either stream the handshake's headers are looked for
HEAD_BYTES = 64 * 1024
_KEY = re.compile(rb"^sec-websocket-key:[ \t]*([!-~]+)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_ACCEPT = re.compile(rb"^sec-websocket-accept:[ \t]*([A-Za-z0-9+/=]{28})", re.I | re.M)


def websocket_accept(request: bytes) -> bytes | None:
    """The accept token for the key in ``request``'s head (None: no key there)."""
    head = request[:HEAD_BYTES].split(b"\r\n\r\n", 1)[0]
    found = _KEY.search(head)
    if found is None:
        return None
    return base64.b64encode(
        hashlib.sha1(found[1] + WS_GUID).digest()
    )  # RFC 6455's hash, not a security choice


def adapted(writes: tuple[Write, ...], framing: str, request: bytes) -> tuple[Write, ...]:
    """``writes`` with the live request's WebSocket accept token in place of the recorded one
    (unchanged for other framings, or when either side has no token)."""
    if framing != "websocket":
        return writes
    accept = websocket_accept(request)
    if accept is None:
        return writes
    head = b""
    for write in writes:
        head += write.data
        if len(head) >= HEAD_BYTES or b"\r\n\r\n" in head:
            break
    found = _ACCEPT.search(head.split(b"\r\n\r\n", 1)[0])
    if found is None:
        return writes
    return _replaced(writes, found.start(1), accept)


def _replaced(writes: tuple[Write, ...], offset: int, new: bytes) -> tuple[Write, ...]:
    """``writes`` with the bytes at stream ``offset`` replaced by ``new`` (same length), each
    write keeping its size and time."""
    out, start = [], 0
    for write in writes:
        data, stop = write.data, start + len(write.data)
        lo, hi = max(offset, start), min(offset + len(new), stop)
        if lo < hi:
            data = data[: lo - start] + new[lo - offset : hi - offset] + data[hi - start :]
        out.append(Write(write.at_s, data))
        start = stop
    return tuple(out)
