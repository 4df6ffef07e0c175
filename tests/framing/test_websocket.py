"""The WebSocket codec pair over wsproto: handshake, exact frames, reassembly under any split,
EOF at every offset, hand-built protocol violations (failure catalogue 44-52), ping, close."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing import FramingOptions, make_client, websocket
from reference_impl.framing.base import ClientCodec, ServerCodec
from reference_impl.framing.request import Request
from tests.wire import bytewise, decode, decode_error, examples, produce_wire, split_at

NAME = "websocket"
# RFC 6455 section 1.3's sample key and the answer it implies.
KEY = b"dGhlIHNhbXBsZSBub25jZQ=="
HEAD = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
)
CLOSE_1000 = b"\x88\x02\x03\xe8"
BINARY = FramingOptions(ws_text=False)
TEXTS = [Message(b"hello"), Message(b""), Message("h\u00e9llo w\u00f6rld \U0001f600".encode())]


@pytest.fixture(autouse=True, scope="module")
def _pinned_nonce() -> Iterator[None]:
    """``decode`` reads a recorded wire with a fresh client, whose random Sec-WebSocket-Key
    would not match the recorded 101 answer. Pin wsproto's nonce for this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("wsproto.handshake.generate_nonce", lambda: KEY)
        yield


def wire_of(messages: list[Message], options: FramingOptions | None = None) -> bytes:
    _, wire = produce_wire(NAME, messages, options=options)
    assert wire.startswith(HEAD)
    return wire


def frame(first: int, payload: bytes) -> bytes:
    """A small unmasked frame: ``first`` is FIN|RSV|opcode."""
    assert len(payload) < 126
    return bytes((first, len(payload))) + payload


def run(
    pieces: Iterable[bytes], options: FramingOptions | None = None
) -> tuple[list[Event], CodecError | None]:
    """Decode with EOF at the end; return the events delivered and the error, if any."""
    client = make_client(NAME, options or FramingOptions())
    client.initiate()
    events: list[Event] = []
    try:
        for piece in pieces:
            events += client.receive_data(piece)
        events += client.receive_eof()
    except CodecError as err:
        return events, err
    return events, None


def code_of(pieces: Iterable[bytes], options: FramingOptions | None = None) -> ErrorCode:
    return decode_error(NAME, pieces, options=options).code


def unmask(data: bytes) -> tuple[int, bytes]:
    """First byte and unmasked payload of one small masked (client) frame."""
    assert data[1] & 0x80 and len(data) == 6 + (data[1] & 0x7F)
    mask, payload = data[2:6], data[6:]
    return data[0], bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ready_pair(options: FramingOptions | None = None) -> tuple[ClientCodec, ServerCodec]:
    options = options or FramingOptions()
    client, server = websocket.client(options), websocket.server(options)
    server.receive_data(client.initiate())
    assert client.receive_data(server.data_to_send()) == []
    return client, server


# --- handshake and wire format ----------------------------------------------------------------


def test_codecs_satisfy_the_protocols_and_handshake() -> None:
    options = FramingOptions(request=Request(path="/v1/agent?x=1"))
    client: ClientCodec = websocket.client(options)
    server: ServerCodec = websocket.server(options)
    assert client.delimiter == "websocket-frame-fin"
    request = client.initiate()
    assert request == (
        b"GET /v1/agent?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: "
        + KEY
        + b"\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    assert (server.ready, server.blocked) == (False, False)
    server.receive_data(request)
    assert (server.ready, server.blocked) == (True, False)
    assert server.data_to_send() == HEAD
    assert server.request_header("HOST") == "127.0.0.1"
    assert server.request_header("Sec-WebSocket-Key") == KEY.decode()
    assert server.request_header("last-event-id") is None


def test_server_keeps_every_request_header() -> None:
    server = websocket.server(FramingOptions())
    server.receive_data(
        b"GET /s HTTP/1.1\r\nHost: example:80\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: " + KEY + b"\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Protocol: chat, superchat\r\nLast-Event-ID: 7\r\n\r\n"
    )
    assert server.ready
    assert server.request_header("host") == "example:80"
    assert server.request_header("sec-websocket-protocol") == "chat, superchat"
    assert server.request_header("Last-Event-Id") == "7"


def test_a_request_that_is_not_an_upgrade_is_refused() -> None:
    server = websocket.server(FramingOptions())
    with pytest.raises(CodecError) as info:
        server.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert info.value.code == ErrorCode.PROTOCOL_ERROR


def test_frames_on_the_wire() -> None:
    body = wire_of([Message(b"hello"), Message(b"")])[len(HEAD) :]
    assert body == b"\x81\x05hello" + b"\x81\x00" + CLOSE_1000
    body = wire_of([Message(b"hi")], BINARY)[len(HEAD) :]
    assert body == b"\x82\x02hi" + CLOSE_1000
    fragmented = FramingOptions(ws_fragment_bytes=2)
    body = wire_of([Message(b"hello"), Message(b"")], fragmented)[len(HEAD) :]
    assert body == b"\x01\x02he" + b"\x00\x02ll" + b"\x80\x01o" + b"\x81\x00" + CLOSE_1000


@pytest.mark.parametrize(
    ("size", "header"),
    [
        (125, b"\x82\x7d"),
        (126, b"\x82\x7e\x00\x7e"),
        (65535, b"\x82\x7e\xff\xff"),
        (65536, b"\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00"),
    ],
)
def test_payload_length_encodings(size: int, header: bytes) -> None:
    message = Message(os.urandom(size))
    wire = wire_of([message], BINARY)
    assert wire[len(HEAD) :] == header + message.data + CLOSE_1000
    assert decode(NAME, [wire]) == [message, StreamEnd(True, "close 1000")]


# --- splits and merges --------------------------------------------------------------------------


@pytest.mark.parametrize("fragment", [0, 1, 2, 5])
@pytest.mark.parametrize("text", [True, False])
def test_whole_and_bytewise_input_give_the_same_events(fragment: int, text: bool) -> None:
    options = FramingOptions(ws_text=text, ws_fragment_bytes=fragment)
    wire = wire_of(TEXTS, options)
    expected = [*TEXTS, StreamEnd(True, "close 1000")]
    assert decode(NAME, [wire]) == expected
    assert decode(NAME, bytewise(wire)) == expected


@examples(120)
@given(
    st.lists(st.text(max_size=12).map(lambda t: Message(t.encode())), max_size=6),
    st.integers(min_value=0, max_value=4),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_or_merge_gives_the_same_events(
    messages: list[Message], fragment: int, text: bool, cuts: list[int]
) -> None:
    options = FramingOptions(ws_text=text, ws_fragment_bytes=fragment)
    wire = wire_of(messages, options)
    assert decode(NAME, split_at(wire, cuts)) == [*messages, StreamEnd(True, "close 1000")]


def test_eof_at_every_offset_gives_a_prefix_of_messages_and_the_right_code() -> None:
    # Fragments of 2 bytes; the text cuts "\xc3\xa9" between two fragments (legal).
    messages = [Message(b"abc"), Message(b""), Message("\u00e9!".encode())]
    wire = wire_of(messages, FramingOptions(ws_fragment_bytes=2))
    ends = [len(HEAD) + 4 + 3, len(HEAD) + 9, len(HEAD) + 9 + 4 + 3]  # where each message ends
    assert wire[ends[-1] :] == CLOSE_1000
    for cut in range(len(wire) + 1):
        events, err = run([wire[:cut]])
        done = sum(end <= cut for end in ends)
        if cut == len(wire):
            assert (events, err) == ([*messages, StreamEnd(True, "close 1000")], None)
            continue
        assert events == messages[:done], cut
        assert err is not None
        boundary = cut <= len(HEAD) or cut in ends or cut > ends[-1]
        expected = ErrorCode.STREAM_END_MISSING if boundary else ErrorCode.FRAME_TRUNCATED
        assert (err.code, err.at_boundary) == (expected, boundary), cut


# --- partial buffer -------------------------------------------------------------------------------


def test_partial_and_expected_size_of_one_frame() -> None:
    client, _ = ready_pair()
    seen: list[tuple[bytes, int | None]] = []
    for piece in bytewise(b"\x81\x03h\xc3\xa9"):
        client.receive_data(piece)
        seen.append((client.partial(), client.expected_size()))
    assert seen == [
        (b"", None),  # one header byte: not a frame yet
        (b"", 3),  # header complete: the frame announces 3 bytes
        (b"h", 3),
        (b"h\xc3", 3),  # half a character is held as received
        (b"", None),  # delivered
    ]


def test_partial_of_a_fragmented_message_has_no_expected_size() -> None:
    client, _ = ready_pair()
    assert client.receive_data(frame(0x01, b"ab") + b"\x00\x03c") == []
    assert (client.partial(), client.expected_size()) == (b"abc", None)
    assert client.receive_data(b"de" + frame(0x80, b"f")) == [Message(b"abcdef")]
    assert (client.partial(), client.expected_size()) == (b"", None)


def test_empty_fragments_make_an_empty_message() -> None:
    # Autobahn 6.1.2: empty text fragments.
    wire = HEAD + frame(0x01, b"") + frame(0x00, b"") + frame(0x80, b"") + CLOSE_1000
    assert decode(NAME, [wire]) == [Message(b""), StreamEnd(True, "close 1000")]


# --- control frames and the end ---------------------------------------------------------------


def test_ping_between_fragments_gets_a_pong_and_the_message_arrives_whole() -> None:
    # Catalogue 45 (Autobahn 5.6-5.8).
    client, _ = ready_pair()
    events = client.receive_data(frame(0x01, b"ab") + frame(0x89, b"hi") + frame(0x80, b"c"))
    assert events == [Message(b"abc")]
    assert unmask(client.data_to_send()) == (0x8A, b"hi")
    assert client.receive_data(frame(0x8A, b"unsolicited")) == []
    assert client.data_to_send() == b""


@pytest.mark.parametrize(
    ("payload", "end"),
    [
        (b"\x03\xe8", StreamEnd(True, "close 1000")),
        (b"\x03\xf3internal", StreamEnd(False, "close 1011")),
        (b"\x0f\xa0", StreamEnd(False, "close 4000")),
        (b"", StreamEnd(False, "close 1005")),
    ],
)
def test_close_is_the_explicit_end_and_is_answered(payload: bytes, end: StreamEnd) -> None:
    client, _ = ready_pair()
    assert client.receive_data(frame(0x88, payload)) == [end]
    answer = payload[:2] or b"\x03\xe8"  # the code is echoed; no code is answered with 1000
    assert unmask(client.data_to_send()) == (0x88, answer)
    assert client.receive_data(b"\x81\x01x trailing bytes are ignored") == []
    assert client.receive_eof() == []


def test_server_end_not_ok_sends_1011_and_reads_the_answer() -> None:
    client, server = ready_pair()
    server.end(ok=False)
    assert client.receive_data(server.data_to_send()) == [StreamEnd(False, "close 1011")]
    server.receive_data(client.data_to_send())  # the client's close answer closes the server
    with pytest.raises(RuntimeError):
        server.send_message(Message(b"late"))


def test_close_between_fragments_is_truncation() -> None:
    # Catalogue 48: the partial message is never delivered.
    events, err = run([HEAD + frame(0x01, b"ab") + frame(0x88, b"\x03\xe8")])
    assert events == []
    assert err is not None and (err.code, err.at_boundary) == (ErrorCode.FRAME_TRUNCATED, False)


@pytest.mark.parametrize(
    ("tail", "code"),
    [
        (b"", ErrorCode.STREAM_END_MISSING),  # at a boundary
        (b"\x81", ErrorCode.FRAME_TRUNCATED),  # inside a data frame header
        (b"\x82\x7e\x01", ErrorCode.FRAME_TRUNCATED),  # inside its extended length
        (b"\x81\x05hel", ErrorCode.FRAME_TRUNCATED),  # inside a frame
        (frame(0x01, b"ab"), ErrorCode.FRAME_TRUNCATED),  # between fragments
        (b"\x88", ErrorCode.STREAM_END_MISSING),  # inside the close frame
        (b"\x88\x02\x03", ErrorCode.STREAM_END_MISSING),
        (frame(0x01, b"ab") + b"\x89", ErrorCode.FRAME_TRUNCATED),  # a ping between fragments
    ],
)
def test_eof_without_close(tail: bytes, code: ErrorCode) -> None:
    # Catalogue 49.
    err = decode_error(NAME, [HEAD + frame(0x81, b"ok") + tail])
    assert (err.code, err.at_boundary) == (code, code is ErrorCode.STREAM_END_MISSING)


def test_eof_during_the_handshake_is_a_missing_end() -> None:
    for head in (b"", HEAD[:20], HEAD[:-1]):
        err = decode_error(NAME, [head])
        assert (err.code, err.at_boundary) == (ErrorCode.STREAM_END_MISSING, True)


# --- protocol violations ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        b"\x81\x85abcd" + b"hello",  # masked server frame (catalogue 51)
        frame(0x83, b"x"),  # reserved opcode
        frame(0x8B, b""),  # reserved control opcode
        frame(0xC1, b"x"),  # RSV1 without a negotiated extension
        frame(0xA1, b"x"),  # RSV2
        frame(0x80, b"x"),  # continuation with nothing to continue (catalogue 46)
        frame(0x00, b"x"),
        frame(0x01, b"a") + frame(0x81, b"b"),  # a new message inside a fragmented one
        frame(0x01, b"a") + frame(0x02, b"b"),
        frame(0x09, b""),  # fragmented ping (Autobahn 5.1)
        b"\x89\x7e\x00\x7e" + b"x" * 126,  # control payload over 125 bytes
        b"\x81\x7e\x00\x05hello",  # 2-byte length where 1 byte does
        b"\x82\x7f\x00\x00\x00\x00\x00\x00\xff\xff",  # 8-byte length where 2 bytes do
        frame(0x88, b"\x03"),  # close payload of 1 byte
    ],
)
def test_protocol_violations(bad: bytes) -> None:
    assert code_of([HEAD + bad]) == ErrorCode.PROTOCOL_ERROR
    assert code_of(bytewise(HEAD + bad)) == ErrorCode.PROTOCOL_ERROR


@pytest.mark.parametrize("code", [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535])
def test_close_codes_that_may_not_be_on_the_wire(code: int) -> None:
    # Catalogue 50 (Autobahn 7.9.x, 7.13.x).
    assert code_of([HEAD + frame(0x88, code.to_bytes(2, "big"))]) == ErrorCode.PROTOCOL_ERROR


def test_invalid_utf8() -> None:
    assert code_of([HEAD + frame(0x81, b"\xff")]) == ErrorCode.INVALID_UTF8
    assert code_of([HEAD + frame(0x81, b"ab\xc3")]) == ErrorCode.INVALID_UTF8  # cut character
    assert code_of([HEAD + frame(0x88, b"\x03\xe8\xff")]) == ErrorCode.INVALID_UTF8  # reason
    # Binary messages are not text.
    assert decode(NAME, [HEAD + frame(0x82, b"\xff")], eof=False) == [Message(b"\xff")]


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        # Catalogue 47 (Autobahn 6.4.1): the 2nd fragment holds 0x110000; fail there.
        (b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", b"\xf4\x90\x80\x80"),
        # A UTF-16 surrogate: CPython's decoder alone would wait for a third byte.
        (b"ok", b"\xed\xa0"),
        (b"ok", b"\xc0"),  # overlong lead byte
    ],
)
def test_invalid_utf8_fails_as_soon_as_the_bad_fragment_arrives(good: bytes, bad: bytes) -> None:
    client, _ = ready_pair()
    assert client.receive_data(frame(0x01, good)) == []
    with pytest.raises(CodecError) as info:
        client.receive_data(frame(0x00, bad))
    assert info.value.code == ErrorCode.INVALID_UTF8
    with pytest.raises(CodecError) as again:
        client.receive_data(frame(0x80, b"edited"))
    assert again.value is info.value


def test_message_size_limit_checks_the_declared_length_first() -> None:
    small = FramingOptions(max_message_bytes=10)
    assert decode(NAME, [HEAD + frame(0x82, b"0123456789")], eof=False, options=small) == [
        Message(b"0123456789")
    ]
    client, _ = ready_pair(small)
    with pytest.raises(CodecError) as info:
        client.receive_data(b"\x82\x0b")  # the header alone announces 11 bytes
    assert info.value.code == ErrorCode.FRAME_TOO_LARGE
    huge = b"\x82\x7f" + (1 << 40).to_bytes(8, "big")
    assert code_of([HEAD + huge], options=small) == ErrorCode.FRAME_TOO_LARGE
    # Accumulated fragments: 6 + 5 bytes fail at the second header.
    client, _ = ready_pair(small)
    assert client.receive_data(frame(0x02, b"012345")) == []
    with pytest.raises(CodecError) as info:
        client.receive_data(b"\x80\x05")
    assert info.value.code == ErrorCode.FRAME_TOO_LARGE


@pytest.mark.parametrize(
    "answer",
    [
        HEAD.replace(b"s3pP", b"AAAA"),  # accept token for another key
        HEAD.replace(b"Upgrade: websocket\r\n", b""),
        b"hello\r\n\r\n",
        b"x" * 17000,
    ],
)
def test_refused_or_bad_handshake_is_a_protocol_error(answer: bytes) -> None:
    assert code_of([answer]) == ErrorCode.PROTOCOL_ERROR


def test_a_refused_upgrade_is_http_status_with_what_the_service_said() -> None:
    answer = b'HTTP/1.1 403 Forbidden\r\ncontent-length: 9\r\n\r\n{"no":1}\n'
    client = websocket.WebSocketClient(FramingOptions())
    client.initiate()
    with pytest.raises(CodecError) as caught:
        client.receive_data(answer)
    said = "the service answered 403 Forbidden: '{\"no\":1}\\n'"
    assert (caught.value.code, caught.value.detail) == (ErrorCode.HTTP_STATUS, said)


def test_server_refuses_misuse_and_bad_client_frames() -> None:
    with pytest.raises(RuntimeError):
        websocket.server(FramingOptions()).send_message(Message(b"before the handshake"))
    _, server = ready_pair()
    with pytest.raises(CodecError) as info:
        server.receive_data(frame(0x81, b"unmasked"))  # clients must mask (RFC 6455 5.1)
    assert info.value.code == ErrorCode.PROTOCOL_ERROR


@pytest.mark.parametrize("monitor", [False, True])
def test_an_answer_that_is_no_http_is_a_bad_status_line(monitor: bool) -> None:
    """Garbage where the upgrade's answer should be is named as such: its first line."""
    options = FramingOptions()
    codec = websocket.monitor(options) if monitor else make_client("websocket", options)
    codec.initiate()
    with pytest.raises(CodecError) as err:
        codec.receive_data(b"garbage garbage\r\n\r\n")
    assert (err.value.code, err.value.detail) == (
        ErrorCode.PROTOCOL_ERROR,
        "bad status line: the answer to the upgrade starts b'garbage garbage', not 'HTTP/1.1 101'",
    )
