"""NDJSON over HTTP: the request, the exact response bytes, how a chunked or close-delimited body
may end at every cut offset, a wrong content type or status, refusals by route, and the same
events under whole, byte-at-a-time and Hypothesis-chosen reads."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing import FramingOptions, make_client
from reference_impl.framing.ndjson_http import NdjsonHttpClient, NdjsonHttpServer
from reference_impl.framing.request import Request, Route
from tests.wire import (
    bytewise,
    chunk,
    decode,
    decode_error,
    examples,
    produce_wire,
    ready,
    split_at,
)

FRAMING = "ndjson-http"
CHUNKED = FramingOptions(sse_body="chunked")
CLOSE = FramingOptions(sse_body="close")
HEAD_CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
HEAD_CLOSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
OLLAMA = Request(
    method="POST",
    path="/api/chat",
    headers=(("Content-Type", "application/json"),),
    body=b'{"model":"m","messages":[{"role":"user","content":"hi"}]}',
)
MESSAGES = [Message(b'{"a":1}'), Message('{"t":"café 🚀"}'.encode()), Message(b"2")]


def ready_server(options: FramingOptions) -> NdjsonHttpServer:
    return ready(NdjsonHttpServer(options), NdjsonHttpClient(options))


def outcome(pieces: list[bytes]) -> tuple[list[Event], ErrorCode | None, bool | None]:
    """Events delivered (those an error carries included), the error's code and boundary."""
    client = make_client(FRAMING, FramingOptions())
    client.initiate()
    events: list[Event] = []
    try:
        for piece in pieces:
            events += client.receive_data(piece)
        events += client.receive_eof()
    except CodecError as err:
        return events + list(err.events), err.code, err.at_boundary
    return events, None, None


# --- wire format ----------------------------------------------------------------------------


def test_the_request_is_the_links_post_with_its_body() -> None:
    assert NdjsonHttpClient(FramingOptions(request=OLLAMA)).initiate() == (
        b"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/x-ndjson\r\n"
        b"Content-Type: application/json\r\nContent-Length: 57\r\n\r\n" + OLLAMA.body
    )
    assert NdjsonHttpClient(FramingOptions()).initiate() == (
        b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/x-ndjson\r\n\r\n"
    )


def test_chunked_wire_is_one_chunk_per_line_then_the_last_chunk() -> None:
    _, wire = produce_wire(FRAMING, MESSAGES, options=CHUNKED)
    lines = [m.data + b"\n" for m in MESSAGES]
    assert wire == HEAD_CHUNKED + b"".join(map(chunk, lines)) + b"0\r\n\r\n"


def test_close_wire_is_the_bare_lines() -> None:
    _, wire = produce_wire(FRAMING, MESSAGES, options=CLOSE)
    assert wire == HEAD_CLOSE + b"".join(m.data + b"\n" for m in MESSAGES)


def test_heartbeat_is_a_blank_line_no_consumer_takes_for_a_message() -> None:
    server = ready_server(CHUNKED)
    server.heartbeat()
    server.send_message(Message(b"{}"))
    server.end()
    wire = HEAD_CHUNKED + server.data_to_send()
    assert wire == HEAD_CHUNKED + chunk(b"\n") + chunk(b"{}\n") + b"0\r\n\r\n"
    assert decode(FRAMING, [wire]) == [Message(b"{}"), StreamEnd(ok=True)]


@pytest.mark.parametrize("data", [b"a\nb", b"", b"x\r"])
def test_send_refuses_what_would_not_come_back(data: bytes) -> None:
    with pytest.raises(ValueError, match="NDJSON message"):
        ready_server(CHUNKED).send_message(Message(data))


def test_server_refuses_another_body_framing() -> None:
    with pytest.raises(ValueError, match="chunked"):
        NdjsonHttpServer(FramingOptions(sse_body="length"))


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        (OLLAMA, None),
        (Request(path="/api/generate", body=OLLAMA.body, method="POST"), 404),
        (Request(path="/api/chat"), 405),
        (Request(method="POST", path="/api/chat", body=OLLAMA.body), 415),
        (Request(method="POST", path="/api/chat", headers=OLLAMA.headers, body=b"{"), 400),
    ],
)
def test_the_route_refuses_what_it_does_not_serve(request_: Request, status: int | None) -> None:
    """As SSE does: the answer is the refusal with its JSON error body, and nothing streams."""
    route = Route.of(OLLAMA, FRAMING)
    server = NdjsonHttpServer(FramingOptions(route=route))
    request = NdjsonHttpClient(FramingOptions(request=request_)).initiate()
    for byte in bytewise(request):
        server.receive_data(byte)
    assert server.refused == status
    answer = server.data_to_send()
    if status is None:
        assert answer == HEAD_CHUNKED
        return
    err = decode_error(FRAMING, [answer])
    assert err.code == ErrorCode.HTTP_STATUS
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert json.loads(body)["error"]["code"] == status


# --- round trips and splits ------------------------------------------------------------------


@pytest.mark.parametrize(("options", "end"), [(CHUNKED, [StreamEnd(ok=True)]), (CLOSE, [])])
def test_round_trip_whole_and_bytewise(options: FramingOptions, end: list[Event]) -> None:
    _, wire = produce_wire(FRAMING, MESSAGES, options=options)
    assert decode(FRAMING, [wire], options=options) == MESSAGES + end
    assert decode(FRAMING, bytewise(wire), options=options) == MESSAGES + end


@examples(60)
@given(
    st.lists(st.binary(min_size=1, max_size=40), max_size=6),
    st.lists(st.integers(0, 900), max_size=10),
    st.booleans(),
)
@example([b"x"], [len(HEAD_CHUNKED) + 3], True)  # a read boundary between a line and its LF
def test_any_split_and_merge_gives_the_same_events(
    payloads: list[bytes], cuts: list[int], chunked: bool
) -> None:
    messages = [
        Message(p.decode("utf-8", "ignore").encode().replace(b"\n", b"").rstrip(b"\r") or b"{}")
        for p in payloads
    ]
    options = CHUNKED if chunked else CLOSE
    _, wire = produce_wire(FRAMING, messages, options=options)
    end: list[Event] = [StreamEnd(ok=True)] if chunked else []
    assert decode(FRAMING, split_at(wire, cuts), options=options) == messages + end


# --- end of stream ----------------------------------------------------------------------------

BODY = b'{"a":1}\r\n\n{"b":2}\n'  # a CRLF line, a blank line, an LF line
ENDS = [BODY.index(b"\n") + 1, len(BODY)]  # where each line's LF has arrived
SPANS = [(0, ENDS[0]), (BODY.index(b'{"b"'), len(BODY))]
LINES = [Message(b'{"a":1}'), Message(b'{"b":2}')]


def expected_at(body_cut: int) -> tuple[list[Event], bool]:
    """The lines delivered when the body stops after ``body_cut`` bytes; is a line cut there?"""
    delivered: list[Event] = [m for m, end in zip(LINES, ENDS, strict=True) if end <= body_cut]
    return delivered, any(a < body_cut < b for a, b in SPANS)


def test_close_delimited_eof_at_every_offset() -> None:
    wire = HEAD_CLOSE + BODY
    for cut in range(len(wire) + 1):
        if cut < len(HEAD_CLOSE):
            assert outcome([wire[:cut]]) == ([], ErrorCode.STREAM_END_MISSING, True), cut
            continue
        delivered, cut_line = expected_at(cut - len(HEAD_CLOSE))
        expected = (ErrorCode.FRAME_TRUNCATED, False) if cut_line else (None, None)
        assert outcome([wire[:cut]]) == (delivered, *expected), cut


def test_chunked_eof_at_every_offset() -> None:
    """Chunk borders inside a line and right after the first line's LF: a cut inside the chunk
    framing after a whole line is STREAM_END_MISSING; inside a line FRAME_TRUNCATED."""
    pieces = [BODY[:4], BODY[4:9], BODY[9:14], BODY[14:]]
    wire = HEAD_CHUNKED + b"".join(map(chunk, pieces)) + b"0\r\n\r\n"
    starts, at = [], len(HEAD_CHUNKED)
    for piece in pieces:  # where each chunk's data starts on the wire, and its size
        head = len(b"%x\r\n" % len(piece))
        starts.append((at + head, len(piece)))
        at += head + len(piece) + 2
    for cut in range(len(wire) + 1):
        got = outcome([wire[:cut]])
        if cut == len(wire):
            assert got == ([*LINES, StreamEnd(ok=True)], None, None)
            continue
        if cut < len(HEAD_CHUNKED):
            assert got == ([], ErrorCode.STREAM_END_MISSING, True), cut
            continue
        received = sum(max(0, min(cut - start, size)) for start, size in starts)
        delivered, cut_line = expected_at(received)
        code = ErrorCode.FRAME_TRUNCATED if cut_line else ErrorCode.STREAM_END_MISSING
        assert got == (delivered, code, not cut_line), cut


def test_the_last_chunk_inside_a_line_is_truncation_never_a_shorter_message() -> None:
    wire = HEAD_CHUNKED + chunk(b'{"done":true}\n{"done"') + b"0\r\n\r\n"
    for pieces in ([wire], bytewise(wire)):
        assert outcome(pieces) == ([Message(b'{"done":true}')], ErrorCode.FRAME_TRUNCATED, False)


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjsonl\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
        b"HTTP/1.1 206 Partial Content\r\nContent-Type: application/x-ndjson\r\n\r\n",
    ],
)
def test_another_content_type_or_2xx_is_a_protocol_error(head: bytes) -> None:
    for pieces in ([head + b"{}\n"], bytewise(head + b"{}\n")):
        assert decode_error(FRAMING, pieces).code == ErrorCode.PROTOCOL_ERROR


def test_an_error_answer_is_http_status_with_what_the_service_said() -> None:
    answer = (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 28\r\n\r\n"
        b'{"error":"model not found"}\n'
    )
    for pieces in ([answer], bytewise(answer)):
        err = decode_error(FRAMING, pieces)
        assert (err.code, err.detail) == (
            ErrorCode.HTTP_STATUS,
            'the service answered 404 Not Found: \'{"error":"model not found"}\\n\'',
        )


def test_content_type_parameters_are_ignored() -> None:
    head = HEAD_CLOSE.replace(b"x-ndjson", b"x-ndjson; charset=utf-8")
    assert decode(FRAMING, [head + b"{}\n"]) == [Message(b"{}")]


def test_line_rules_are_ndjsons() -> None:
    """Over the limit, or not UTF-8: the codes of plain NDJSON, the lines before delivered."""
    options = FramingOptions(max_message_bytes=4)
    too_long = decode_error(FRAMING, [HEAD_CLOSE + b"{}\n12345\n"], options=options)
    assert (too_long.code, too_long.events) == (ErrorCode.FRAME_TOO_LARGE, [Message(b"{}")])
    bad = decode_error(FRAMING, [HEAD_CHUNKED + chunk(b"\xff\n")])
    assert bad.code == ErrorCode.INVALID_UTF8
