"""Heartbeats are framed for the link they are written on: an SSE comment line (its own HTTP
chunk on a chunked body), a WebSocket ping frame (masked when the proxy writes as the client),
an HTTP/2 PING frame; ``raw`` is the text as it is."""

from __future__ import annotations

import pytest

from harness.faults import Stall
from harness.faults.heartbeat import (
    check_heartbeat,
    heartbeat_problem,
    http2_ping,
    sse_comment,
    websocket_ping,
)
from harness.faults.items import Chunk, Heartbeat
from harness.faults.position import Position
from harness.faults.stage import LinkShape, StageContext
from tests.faults.conftest import FakeLocator, FakeRecorder, chunks, raises_field, run_fault


def test_an_sse_comment_is_one_line_and_its_own_chunk_on_a_chunked_body() -> None:
    assert sse_comment("ping", chunked=False) == b": ping\n"
    assert sse_comment("ping", chunked=True) == b"7\r\n: ping\n\r\n"


def test_a_websocket_ping_is_a_control_frame_masked_only_from_the_client() -> None:
    assert websocket_ping(b"hi", masked=False) == b"\x89\x02hi"
    masked = websocket_ping(b"hi", masked=True)
    assert masked[:2] == b"\x89\x82"
    key, body = masked[2:6], masked[6:]
    assert bytes(b ^ key[i % 4] for i, b in enumerate(body)) == b"hi"


def test_an_http2_ping_is_a_frame_on_stream_zero_with_eight_bytes() -> None:
    frame = http2_ping()
    assert (frame[:3], frame[3], frame[4], frame[5:9], len(frame)) == (
        b"\x00\x00\x08",
        6,
        0,
        b"\x00\x00\x00\x00",
        17,
    )


@pytest.mark.parametrize(
    ("kind", "text", "path"),
    [
        (None, "x", "heartbeat_text"),
        ("raw", None, "heartbeat"),
        ("grpc-ping", "x", "heartbeat_text"),
        ("websocket-ping", "x" * 126, "heartbeat_text"),
        ("sse-comment", "two\nlines", "heartbeat_text"),
    ],
)
def test_heartbeat_rules(kind: str | None, text: str | None, path: str) -> None:
    with raises_field(path):
        check_heartbeat(kind, text)  # type: ignore[arg-type]


def test_a_heartbeat_belongs_to_its_framing() -> None:
    assert heartbeat_problem("websocket-ping", "websocket") is None
    assert heartbeat_problem("raw", "grpc") is None
    assert heartbeat_problem("sse-comment", "ndjson") == (
        "a sse-comment heartbeat needs framing sse (this link is ndjson)"
    )


def test_a_stall_writes_the_link_s_heartbeat() -> None:
    fault = Stall(
        at=Position(offset=2),
        duration_ms=250,
        heartbeat="sse-comment",
        heartbeat_interval_ms=100,
    )
    ctx = StageContext("downstream", FakeLocator(), FakeRecorder(), shape=LinkShape("sse", True))
    stage = fault.stage(ctx)
    assert stage.pipe(chunks(b"abcd")[0], 0.0) == [Chunk(b"ab", 0)]
    assert stage.poll(0.1) == [Heartbeat(b"7\r\n: ping\n\r\n")]
    raw = Stall(
        at=Position(offset=2),
        duration_ms=250,
        heartbeat="raw",
        heartbeat_text=".",
        heartbeat_interval_ms=100,
    )
    run = run_fault(raw, chunks(b"abcd"))
    assert run.data == b"ab..cd"
