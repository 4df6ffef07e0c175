"""The one change a replay makes: the live WebSocket accept token (RFC 6455 section 4.2.2)."""

from __future__ import annotations

from harness.record.adapt import adapted, websocket_accept
from harness.record.schedule import Write

#: RFC 6455's own example
KEY, ACCEPT = b"dGhlIHNhbXBsZSBub25jZQ==", b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
RECORDED = b"Y" * 27 + b"="
REQUEST = b"GET /ws HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Key: " + KEY + b"\r\n\r\n"
RESPONSE = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Accept: " + RECORDED + b"\r\n\r\n\x81\x02hi"
)


def test_the_accept_token_is_the_rfc_s() -> None:
    assert websocket_accept(REQUEST) == ACCEPT
    assert websocket_accept(b"GET / HTTP/1.1\r\n\r\n") is None


def test_the_token_is_replaced_in_place_across_writes() -> None:
    cut = RESPONSE.index(RECORDED) + 10  # the token straddles two writes
    writes = (Write(0.0, RESPONSE[:cut]), Write(0.5, RESPONSE[cut:]))
    out = adapted(writes, "websocket", REQUEST)
    assert [(w.at_s, len(w.data)) for w in out] == [(0.0, cut), (0.5, len(RESPONSE) - cut)]
    assert b"".join(w.data for w in out) == RESPONSE.replace(RECORDED, ACCEPT)


def test_other_framings_and_requests_without_a_key_are_left_alone() -> None:
    writes = (Write(0.0, RESPONSE),)
    assert adapted(writes, "sse", REQUEST) == writes
    assert adapted(writes, "websocket", b"GET / HTTP/1.1\r\n\r\n") == writes
