"""The SSE codec pair over h11: request and response heads, exact wire bytes, chunked versus
close-delimited ends at every cut offset, handshake errors, and split invariance."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing import FramingOptions
from reference_impl.framing.request import Request
from reference_impl.framing.sse import SseClient, SseServer
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

CHUNKED = FramingOptions(sse_body="chunked")
CLOSE = FramingOptions(sse_body="close")
HEAD_CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
HEAD_CLOSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
MESSAGES = [
    Message(b"one", id="1"),
    Message(b'{"t": "caf\xc3\xa9"}\n\nlast', kind="delta"),
    Message(b""),
]
EVENTS = [
    b"id: 1\ndata: one\n\n",
    b'event: delta\ndata: {"t": "caf\xc3\xa9"}\ndata: \ndata: last\n\n',
]
EVENTS.append(b"data: \n\n")
RECEIVED = [MESSAGES[0], Message(MESSAGES[1].data, "delta", "1"), Message(b"", id="1")]


def ready_server(options: FramingOptions) -> SseServer:
    return ready(SseServer(options), SseClient(options))


# --- wire format ----------------------------------------------------------------------------


def test_request_bytes() -> None:
    assert SseClient(FramingOptions()).initiate() == (
        b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    )
    options = FramingOptions(resume_id="\u00e97", request=Request(path="/v1/events?x=1"))
    resumed = SseClient(options).initiate()
    assert resumed == (
        b"GET /v1/events?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        b"Last-Event-ID: \xc3\xa97\r\n\r\n"
    )


@pytest.mark.parametrize("resume_id", ["a\r\nX-Evil: 1", "a\nb", "a\0b"])
def test_request_refuses_header_injection(resume_id: str) -> None:
    with pytest.raises(ValueError):
        SseClient(FramingOptions(resume_id=resume_id)).initiate()


def test_chunked_wire_is_one_chunk_per_message_then_the_last_chunk() -> None:
    request, wire = produce_wire("sse", MESSAGES, options=CHUNKED)
    assert request.startswith(b"GET /stream HTTP/1.1\r\n")
    assert wire == HEAD_CHUNKED + b"".join(map(chunk, EVENTS)) + b"0\r\n\r\n"


def test_close_wire_is_the_bare_event_stream() -> None:
    _, wire = produce_wire("sse", MESSAGES, options=CLOSE)
    assert wire == HEAD_CLOSE + b"".join(EVENTS)


def test_heartbeat_and_failed_end() -> None:
    server = ready_server(CHUNKED)
    server.heartbeat()
    server.end(ok=False)  # no last chunk: the consumer must see the stream as cut
    assert server.data_to_send() == chunk(b": ping\n\n")
    assert server.blocked is False
    close = ready_server(CLOSE)
    close.heartbeat()
    close.end()
    assert close.data_to_send() == b": ping\n\n"


@pytest.mark.parametrize(
    "message",
    [
        Message(b"a\rb"),
        Message(b"a\r\n"),
        Message(b"\xff"),
        Message(b"x", kind="a\nb"),
        Message(b"x", kind="a\r"),
        Message(b"x", id="1\n"),
        Message(b"x", id="1\0"),
    ],
)
def test_send_refuses_what_would_not_come_back(message: Message) -> None:
    server = ready_server(CHUNKED)
    with pytest.raises(ValueError):
        server.send_message(message)
    assert server.data_to_send() == b""


def test_server_misuse_is_loud() -> None:
    server = SseServer(CHUNKED)
    assert not server.ready
    with pytest.raises(RuntimeError):
        server.send_message(Message(b"x"))
    server = ready_server(CHUNKED)
    server.end()
    with pytest.raises(RuntimeError):
        server.send_message(Message(b"x"))
    with pytest.raises(RuntimeError):
        server.end()
    with pytest.raises(ValueError):
        SseServer(FramingOptions(sse_body="length"))


def test_server_reads_the_request_head_one_byte_at_a_time() -> None:
    request = SseClient(FramingOptions(resume_id="42")).initiate()
    server = SseServer(CLOSE)
    assert server.request_header("last-event-id") is None
    for piece in bytewise(request[:-1]):
        server.receive_data(piece)
    assert not server.ready
    assert server.data_to_send() == b""
    server.receive_data(request[-1:])
    assert server.ready
    assert server.data_to_send() == HEAD_CLOSE
    assert server.request_header("Last-Event-ID") == "42"
    assert server.request_header("ACCEPT") == "text/event-stream"
    assert server.request_header("cookie") is None


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NOT HTTP\r\n\r\n",
        b"GET /x HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX: \xff\r\n\r\n",
    ],
)
def test_server_rejects_a_bad_request(request_bytes: bytes) -> None:
    server = SseServer(CHUNKED)
    with pytest.raises(CodecError) as info:
        server.receive_data(request_bytes)
    assert info.value.code == ErrorCode.PROTOCOL_ERROR
    with pytest.raises(CodecError) as again:
        server.receive_data(b"x")
    assert again.value is info.value


# --- round trips and splits ------------------------------------------------------------------


@pytest.mark.parametrize(("options", "end"), [(CHUNKED, [StreamEnd(ok=True)]), (CLOSE, [])])
def test_round_trip_whole_and_bytewise(options: FramingOptions, end: list[Event]) -> None:
    _, wire = produce_wire("sse", MESSAGES, options=options)
    assert decode("sse", [wire], options=options) == RECEIVED + end
    assert decode("sse", bytewise(wire), options=options) == RECEIVED + end


@examples(60)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"")), max_size=6),
    st.lists(st.integers(0, 2000), max_size=10),
    st.booleans(),
)
def test_any_split_and_merge_gives_the_same_events(
    payloads: list[bytes], cuts: list[int], chunked: bool
) -> None:
    messages = [
        Message(p.decode("utf-8", "ignore").encode(), id=str(i)) for i, p in enumerate(payloads)
    ]
    options = CHUNKED if chunked else CLOSE
    _, wire = produce_wire("sse", messages, options=options)
    end: list[Event] = [StreamEnd(ok=True)] if chunked else []
    assert decode("sse", split_at(wire, cuts), options=options) == messages + end


# --- end of stream ----------------------------------------------------------------------------


def events_then_error(pieces: list[bytes]) -> tuple[list[Event], CodecError | None]:
    client = SseClient(FramingOptions())
    client.initiate()
    events: list[Event] = []
    try:
        for piece in pieces:
            events += client.receive_data(piece)
        events += client.receive_eof()
    except CodecError as err:
        return events, err
    return events, None


def body_layout() -> tuple[bytes, list[int], list[tuple[int, int]]]:
    """A body of two events around a heartbeat: the body, event ends, event spans."""
    body = b"id: 1\r\ndata: one\r\n\r\n: ping\n\nevent: t\ndata: two\ndata: 2\n\n"
    first = body.index(b"\r\n\r\n") + 3  # the CR of a CRLF blank line already dispatches
    second = body.index(b"event")
    return body, [first, len(body)], [(0, first), (second, len(body))]


def expected_at(body_cut: int) -> tuple[list[Event], bool]:
    """Messages delivered when the body stops after ``body_cut`` bytes; is an event cut there?"""
    _, ends, spans = body_layout()
    messages = [Message(b"one", id="1"), Message(b"two\n2", "t", "1")]
    delivered: list[Event] = [m for m, end in zip(messages, ends, strict=True) if end <= body_cut]
    return delivered, any(a < body_cut < b for a, b in spans)


def test_close_delimited_eof_at_every_offset() -> None:
    body, _, _ = body_layout()
    wire = HEAD_CLOSE + body
    for cut in range(len(wire) + 1):
        events, err = events_then_error([wire[:cut]])
        if cut < len(HEAD_CLOSE):
            assert (events, err and err.code, err and err.at_boundary) == (
                [],
                ErrorCode.STREAM_END_MISSING,
                True,
            ), cut
            continue
        delivered, cut_event = expected_at(cut - len(HEAD_CLOSE))
        assert events == delivered, cut
        if cut_event:
            assert err is not None and err.code == ErrorCode.FRAME_TRUNCATED, cut
            assert not err.at_boundary
        else:
            assert err is None, cut


def test_chunked_eof_at_every_offset() -> None:
    body, _, _ = body_layout()
    # Chunk borders fall inside events and right after the first one's blank line (byte 20).
    pieces = [body[:10], body[10:20], body[20:40], body[40:]]
    wire = HEAD_CHUNKED + b"".join(map(chunk, pieces)) + b"0\r\n\r\n"
    for cut in range(len(wire) + 1):
        events, err = events_then_error([wire[:cut]])
        if cut == len(wire):
            assert (events, err) == (expected_at(len(body))[0] + [StreamEnd(ok=True)], None)
            continue
        assert err is not None, cut
        if cut < len(HEAD_CHUNKED):
            assert (events, err.code, err.at_boundary) == ([], ErrorCode.STREAM_END_MISSING, True)
            continue
        delivered, cut_event = expected_at(body_received(wire, cut))
        assert events == delivered, cut
        code = ErrorCode.FRAME_TRUNCATED if cut_event else ErrorCode.STREAM_END_MISSING
        assert (err.code, err.at_boundary) == (code, not cut_event), cut


def body_received(wire: bytes, cut: int) -> int:
    """How many body bytes a chunked ``wire`` cut after ``cut`` bytes delivers (chunk walker)."""
    pos, received = len(HEAD_CHUNKED), 0
    while pos < cut:
        line_end = wire.index(b"\r\n", pos)
        size = int(wire[pos:line_end], 16)
        start = line_end + 2
        received += max(0, min(cut, start + size) - start)
        pos = start + size + 2
    return received


def test_catalogue_case15_chunked_body_cut_before_the_last_chunk() -> None:
    wire = HEAD_CHUNKED + b"b\r\ndata: one\n\n\r\n" + b"8\r\ndata: tw\r\n"
    events, err = events_then_error([wire])
    assert events == [Message(b"one")]
    assert err is not None and (err.code, err.at_boundary) == (ErrorCode.FRAME_TRUNCATED, False)
    events, err = events_then_error([HEAD_CHUNKED + b"b\r\ndata: one\n\n\r\n"])
    assert events == [Message(b"one")]
    assert err is not None and (err.code, err.at_boundary) == (ErrorCode.STREAM_END_MISSING, True)


def test_catalogue_case16_close_delimited_cut_is_not_a_clean_end() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    events, err = events_then_error([head + b"data: one\n\ndata: tw"])
    assert events == [Message(b"one")]
    assert err is not None and err.code == ErrorCode.FRAME_TRUNCATED
    assert events_then_error([head + b"data: one\n\n"]) == ([Message(b"one")], None)


def test_catalogue_case17_content_length() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
    body = b"data: one\n\n"
    assert decode("sse", [head % len(body) + body]) == [Message(b"one"), StreamEnd(ok=True)]
    short = decode_error("sse", [head % 20 + body + b"d"])
    assert (short.code, short.at_boundary) == (ErrorCode.FRAME_TRUNCATED, False)
    short = decode_error("sse", [head % 20 + body])
    assert (short.code, short.at_boundary) == (ErrorCode.STREAM_END_MISSING, True)


def test_explicit_end_inside_an_event_is_truncation() -> None:
    client = SseClient(FramingOptions())
    client.initiate()
    with pytest.raises(CodecError) as info:
        client.receive_data(HEAD_CHUNKED + chunk(b"data: x\n") + b"0\r\n\r\n")
    assert info.value.code == ErrorCode.FRAME_TRUNCATED
    with pytest.raises(CodecError) as again:
        client.receive_eof()
    assert again.value is info.value


def test_bytes_after_the_end_are_a_protocol_error() -> None:
    wire = HEAD_CHUNKED + chunk(b"data: x\n\n") + b"0\r\n\r\n"
    assert decode_error("sse", [wire + b"junk"]).code == ErrorCode.PROTOCOL_ERROR
    assert decode_error("sse", [wire, b"junk"]).code == ErrorCode.PROTOCOL_ERROR
    client = SseClient(FramingOptions())
    client.initiate()
    client.receive_data(HEAD_CLOSE)
    assert client.receive_eof() == []
    with pytest.raises(CodecError) as info:
        client.receive_data(b"data: late\n\n")
    assert info.value.code == ErrorCode.PROTOCOL_ERROR


# --- handshake and body errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 204 No Content\r\nContent-Type: text/event-stream\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-streams\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Type: text/plain\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        b"\r\nzz\r\n",
        b"SSH-2.0-OpenSSH\r\n\r\n",
    ],
)
def test_handshake_errors(head: bytes) -> None:
    for pieces in ([head], bytewise(head)):
        err = decode_error("sse", pieces)
        assert err.code == ErrorCode.PROTOCOL_ERROR


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 26\r\n"
            b'\r\n{"error":{"message":"no"}}',
            'the service answered 404 Not Found: \'{"error":{"message":"no"}}\'',
        ),
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/event-stream\r\n\r\n",
            "the service answered 404 Not Found (no body)",
        ),
        (
            b"HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
            "the service answered 301 Moved (no body)",
        ),
        (
            b"HTTP/1.1 500 Oops\r\nContent-Length: 300\r\n\r\n" + b"x" * 300,
            "the service answered 500 Oops: '" + "x" * 200 + "'\u2026",
        ),
    ],
)
def test_an_error_answer_is_http_status_with_what_the_service_said(
    answer: bytes, said: str
) -> None:
    """Whole, byte by byte: the status and the first 200 bytes of the body, however read."""
    for pieces in ([answer], bytewise(answer)):
        err = decode_error("sse", pieces)
        assert (err.code, err.detail) == (ErrorCode.HTTP_STATUS, said)


@pytest.mark.parametrize(
    "content_type",
    [
        b"text/event-stream; charset=utf-8",
        b"Text/Event-Stream",
        b"text/event-stream;charset=latin-1",
    ],
)
def test_content_type_parameters_are_ignored(content_type: bytes) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\nConnection: close\r\n\r\n"
    # The stream is UTF-8 whatever the charset says (catalogue case 6).
    assert decode("sse", [head + b"data: \xe2\x9c\x85\n\n"]) == [Message(b"\xe2\x9c\x85")]


def test_informational_response_is_skipped() -> None:
    wire = b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + HEAD_CLOSE + b"data: x\n\n"
    assert decode("sse", [wire]) == [Message(b"x")]


def test_body_errors_pass_through_the_codec() -> None:
    invalid = decode_error("sse", [HEAD_CLOSE + b"data: ok\n\ndata: \xc3\x28\n\n"])
    assert invalid.code == ErrorCode.INVALID_UTF8
    options = FramingOptions(max_message_bytes=8)
    big = decode_error("sse", [HEAD_CLOSE, b"data: 123456789"], eof=False, options=options)
    assert big.code == ErrorCode.FRAME_TOO_LARGE
    exact = decode("sse", [HEAD_CLOSE + b"data: 12345678\n\n"], options=options)
    assert exact == [Message(b"12345678")]


def test_client_state_is_visible() -> None:
    client = SseClient(FramingOptions())
    assert client.delimiter == "blank-line"
    client.initiate()
    assert client.receive_data(HEAD_CLOSE + b"retry: 3000\nid: 7\ndata: a\n\nid: 8\ndata: par") == [
        Message(b"a", id="7")
    ]
    assert (client.retry_ms, client.last_event_id) == (3000, "7")
    assert client.partial() == b"id: 8\ndata: par"
    assert client.expected_size() is None
    assert client.data_to_send() == b""
    assert client.receive_data(b"tial\n\n") == [Message(b"partial", id="8")]
    assert (client.partial(), client.last_event_id) == (b"", "8")


@pytest.mark.parametrize("size", ["ffffffffffffffff", "1ffffffff"])
def test_a_chunk_size_no_stream_has_is_refused(size: str) -> None:
    """h11 takes any chunk size: past ``MAX_CHUNK_BYTES`` the codec refuses it, before it
    reads the rest of the stream as one chunk; whole and a byte at a time."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    wire = head + size.encode() + b"\r\n" + b"data: x\n\n" * 5
    for pieces in ([wire], bytewise(wire)):
        err = decode_error("sse", pieces)
        assert (err.code, err.detail) == (
            ErrorCode.PROTOCOL_ERROR,
            "HTTP: a chunk of more than 4294967296 bytes announced",
        )
