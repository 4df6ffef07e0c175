"""The gRPC codec pair over h2: the call, messages under any split, EOF at every offset,
trailers and their absence, resets, bad prefixes (failure catalogue 36-43), flow control."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing import FramingOptions, grpc, make_client
from reference_impl.framing.base import ClientCodec, ServerCodec
from reference_impl.framing.request import Request
from tests.wire import bytewise, decode, decode_error, examples, produce_wire, split_at

NAME = "grpc"
OK = StreamEnd(True, "grpc-status 0")
MESSAGES = [Message(b"hello"), Message(b""), Message(b"\x00\x00\x00\x00\x05"), Message(b"x" * 300)]
RESPONSE = [(":status", "200"), ("content-type", "application/grpc")]
DATA, HEADERS = 0x0, 0x1


def wire_of(messages: list[Message], end: bool = True) -> bytes:
    return produce_wire(NAME, messages, end=end)[1]


def prefix(size: int, flag: int = 0) -> bytes:
    return bytes([flag]) + size.to_bytes(4, "big")


def frames(wire: bytes) -> list[tuple[int, int, int]]:
    """``(start, end, type)`` of each HTTP/2 frame in a server's wire."""
    found, pos = [], 0
    while pos < len(wire):
        end = pos + 9 + int.from_bytes(wire[pos : pos + 3], "big")
        found.append((pos, end, wire[pos + 3]))
        pos = end
    return found


def raw_server(respond: bool = True) -> H2Connection:
    """A bare h2 server that has read the client's call: tests write any frames with it."""
    h2 = H2Connection(H2Configuration(client_side=False))
    h2.initiate_connection()
    h2.receive_data(grpc.client(FramingOptions()).initiate())
    if respond:
        h2.send_headers(1, RESPONSE)
    return h2


def run(pieces: Iterable[bytes]) -> tuple[list[Event], CodecError | None]:
    """Decode with EOF at the end; return the events delivered and the error, if any."""
    client = make_client(NAME, FramingOptions())
    client.initiate()
    events: list[Event] = []
    try:
        for piece in pieces:
            events += client.receive_data(piece)
        events += client.receive_eof()
    except CodecError as err:
        return events, err
    return events, None


def code_of(h2: H2Connection, eof: bool = True) -> ErrorCode:
    return decode_error(NAME, [h2.data_to_send()], eof=eof).code


# --- the call and the wire ----------------------------------------------------------------------


def test_codecs_satisfy_the_protocols_and_open_the_call() -> None:
    options = FramingOptions(request=Request(path="/tearline.Link/Stream"))
    client: ClientCodec = grpc.client(options)
    server: ServerCodec = grpc.server(options)
    assert client.delimiter == "grpc-5-byte-prefix"
    request = client.initiate()
    assert request.startswith(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    assert request.endswith(b"\x00\x00\x05\x00\x01\x00\x00\x00\x01" + prefix(0))  # END_STREAM
    assert (server.ready, server.blocked) == (False, False)
    server.receive_data(request)
    assert (server.ready, server.blocked) == (True, False)
    assert server.request_header(":path") == "/tearline.Link/Stream"
    assert server.request_header("Content-Type") == "application/grpc"
    assert server.request_header("TE") == "trailers"
    assert server.request_header("grpc-timeout") is None


def test_each_message_is_a_prefix_and_its_bytes_in_data_frames() -> None:
    wire = wire_of([Message(b"hello"), Message(b"")])
    kinds = [kind for _, _, kind in frames(wire)]
    assert kinds[-3:] == [DATA, DATA, HEADERS]  # the trailers come last
    data = [wire[start + 9 : end] for start, end, kind in frames(wire) if kind == DATA]
    assert data == [prefix(5) + b"hello", prefix(0)]
    assert wire[frames(wire)[-1][0] + 4] & 0x1  # END_STREAM on the trailers


def test_whole_and_bytewise_input_give_the_same_events() -> None:
    wire = wire_of(MESSAGES)
    assert decode(NAME, [wire]) == [*MESSAGES, OK]
    assert decode(NAME, bytewise(wire)) == [*MESSAGES, OK]


@examples(100)
@given(
    st.lists(st.binary(max_size=40).map(Message), max_size=6),
    st.lists(st.integers(min_value=0, max_value=500), max_size=12),
)
def test_any_split_or_merge_gives_the_same_events(messages: list[Message], cuts: list[int]) -> None:
    assert decode(NAME, split_at(wire_of(messages), cuts)) == [*messages, OK]


def test_message_boundaries_have_no_relation_to_data_frames() -> None:
    # Catalogue 36: a prefix split across frames, two messages in one frame, an empty message.
    h2 = raw_server()
    h2.send_data(1, prefix(3) + b"ab")
    h2.send_data(1, b"c" + prefix(0) + prefix(2)[:3])
    h2.send_data(1, prefix(2)[3:] + b"xy")
    h2.send_headers(1, [("grpc-status", "0")], end_stream=True)
    wire = h2.data_to_send()
    expected = [Message(b"abc"), Message(b""), Message(b"xy"), OK]
    assert decode(NAME, [wire]) == expected
    assert decode(NAME, bytewise(wire)) == expected


# --- cuts -----------------------------------------------------------------------------------------


def test_eof_at_every_offset_gives_a_prefix_of_messages_and_the_right_code() -> None:
    messages = [Message(b"ab"), Message(b""), Message(b"cde")]
    wire = wire_of(messages)
    data = [(start, end) for start, end, kind in frames(wire) if kind == DATA]
    assert len(data) == len(messages)  # our server: one DATA frame per small message
    for cut in range(len(wire) + 1):
        events, err = run([wire[:cut]])
        if cut == len(wire):
            assert (events, err) == ([*messages, OK], None)
            continue
        assert events == messages[: sum(end <= cut for _, end in data)], cut
        # Inside a DATA frame once its type byte is in: a message is on its way.
        inside = any(start + 4 <= cut < end for start, end in data)
        code = ErrorCode.FRAME_TRUNCATED if inside else ErrorCode.STREAM_END_MISSING
        assert err is not None and (err.code, err.at_boundary) == (code, not inside), cut


def test_partial_and_expected_size_see_into_an_incomplete_data_frame() -> None:
    body = b"hello world"
    wire = wire_of([Message(body)])
    start, end = next((s, e) for s, e, kind in frames(wire) if kind == DATA)
    for cut in range(start, end + 1):
        client = make_client(NAME, FramingOptions())
        client.initiate()
        client.receive_data(wire[:cut])
        seen = cut - start - 9  # DATA payload bytes received
        if seen < 0 or cut == end:
            expected: tuple[bytes, int | None] = (b"", None)
        elif seen < 5:
            expected = (prefix(len(body))[:seen], None)  # inside the prefix: its bytes
        else:
            expected = (body[: seen - 5], len(body))
        assert (client.partial(), client.expected_size()) == expected, cut


def test_missing_trailers() -> None:
    # Catalogue 38: a stream without trailers is truncated, never OK.
    events, err = run([wire_of([Message(b"a")], end=False)])
    assert events == [Message(b"a")]
    assert err is not None and (err.code, err.at_boundary) == (ErrorCode.STREAM_END_MISSING, True)
    h2 = raw_server()
    h2.send_data(1, prefix(1) + b"a", end_stream=True)
    assert code_of(h2, eof=False) == ErrorCode.STREAM_END_MISSING


def test_end_of_stream_inside_a_message_is_truncation() -> None:
    # Catalogue 37: the prefix says 5 bytes, 2 arrive, then END_STREAM (or trailers).
    h2 = raw_server()
    h2.send_data(1, prefix(5) + b"ab", end_stream=True)
    assert code_of(h2, eof=False) == ErrorCode.FRAME_TRUNCATED
    h2 = raw_server()
    h2.send_data(1, prefix(5) + b"ab")
    h2.send_headers(1, [("grpc-status", "0")], end_stream=True)
    assert code_of(h2, eof=False) == ErrorCode.FRAME_TRUNCATED


# --- the end and its status -----------------------------------------------------------------------


def test_failed_status_ends_the_stream_not_ok() -> None:
    client, server = grpc.client(FramingOptions()), grpc.server(FramingOptions())
    server.receive_data(client.initiate())
    client.receive_data(server.data_to_send())
    server.end(ok=False)
    assert client.receive_data(server.data_to_send()) == [StreamEnd(False, "grpc-status 13")]
    assert client.receive_eof() == []
    with pytest.raises(RuntimeError):
        server.send_message(Message(b"after the end"))


@pytest.mark.parametrize(("status", "ok"), [("0", True), ("5", False)])
def test_trailers_only_response(status: str, ok: bool) -> None:
    # Catalogue 43: one HEADERS frame with END_STREAM carries the status.
    h2 = raw_server(respond=False)
    h2.send_headers(1, [*RESPONSE, ("grpc-status", status)], end_stream=True)
    assert decode(NAME, [h2.data_to_send()]) == [StreamEnd(ok, f"grpc-status {status}")]


@pytest.mark.parametrize("trailers", [[], [("grpc-status", "ok")], [("grpc-status", "")]])
def test_trailers_without_a_valid_status(trailers: list[tuple[str, str]]) -> None:
    h2 = raw_server()
    h2.send_headers(1, [*trailers, ("x-other", "1")], end_stream=True)
    assert code_of(h2, eof=False) == ErrorCode.PROTOCOL_ERROR


@pytest.mark.parametrize(
    "response",
    [
        [(":status", "200"), ("content-type", "text/html")],
        [(":status", "200")],
    ],
)
def test_a_response_that_is_not_grpc(response: list[tuple[str, str]]) -> None:
    h2 = raw_server(respond=False)
    h2.send_headers(1, response)
    assert code_of(h2, eof=False) == ErrorCode.PROTOCOL_ERROR


def test_an_http_error_status_is_http_status() -> None:
    h2 = raw_server(respond=False)
    h2.send_headers(1, [(":status", "503"), ("content-type", "application/grpc")])
    assert code_of(h2, eof=False) == ErrorCode.HTTP_STATUS


@pytest.mark.parametrize("error", [ErrorCodes.NO_ERROR, ErrorCodes.CANCEL, 0x99])
def test_reset_stream_is_a_remote_error(error: int) -> None:
    # Catalogue 39: even RST_STREAM(NO_ERROR) before the trailers is a failure.
    h2 = raw_server()
    h2.send_data(1, prefix(1) + b"a")
    h2.reset_stream(1, error)
    assert code_of(h2, eof=False) == ErrorCode.REMOTE_ERROR


def test_goaway() -> None:
    h2 = raw_server()
    h2.close_connection(ErrorCodes.ENHANCE_YOUR_CALM)
    assert code_of(h2, eof=False) == ErrorCode.REMOTE_ERROR
    h2 = raw_server()
    h2.close_connection(ErrorCodes.NO_ERROR, last_stream_id=1)  # graceful: EOF decides
    events, err = run([h2.data_to_send()])
    assert events == []
    assert err is not None and err.code == ErrorCode.STREAM_END_MISSING


# --- bad prefixes and bad frames ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "code"), [(1, ErrorCode.PROTOCOL_ERROR), (2, ErrorCode.MALFORMED_FRAME)]
)
def test_compressed_flag_fails_on_its_byte(flag: int, code: ErrorCode) -> None:
    # Catalogue 42: no grpc-encoding was negotiated; the payload is never decoded.
    h2 = raw_server()
    h2.send_data(1, prefix(3, flag) + b"abc")
    wire = h2.data_to_send()
    flag_at = frames(wire)[-1][0] + 9
    client = make_client(NAME, FramingOptions())
    client.initiate()
    assert client.receive_data(wire[:flag_at]) == []
    with pytest.raises(CodecError) as info:
        client.receive_data(wire[flag_at : flag_at + 1])  # h2 still holds the DATA frame
    assert info.value.code == code


def test_declared_length_above_the_limit_fails_as_soon_as_the_prefix_is_in() -> None:
    # Catalogue 41; the limit is inclusive.
    small = FramingOptions(max_message_bytes=4)
    for size, fails in [(4, False), (5, True)]:
        h2 = raw_server()
        h2.send_data(1, prefix(size) + b"abcde"[:size])
        wire = h2.data_to_send()
        prefix_end = frames(wire)[-1][0] + 9 + 5
        client = make_client(NAME, small)
        client.initiate()
        assert client.receive_data(wire[: prefix_end - 1]) == []
        if not fails:
            assert client.receive_data(wire[prefix_end - 1 :]) == [Message(b"abcd")]
            continue
        with pytest.raises(CodecError) as info:
            client.receive_data(wire[prefix_end - 1 : prefix_end])
        assert info.value.code == ErrorCode.FRAME_TOO_LARGE
        assert client.expected_size() == 5 and client.partial() == b""
    h2 = raw_server()
    h2.send_data(1, prefix(0xFFFF_FFFF) + b"{")
    assert code_of(h2, eof=False) == ErrorCode.FRAME_TOO_LARGE


@pytest.mark.parametrize(
    "bad",
    [
        b"\x00\x00\x01\x04\x00\x00\x00\x00\x00\x00",  # SETTINGS of 1 byte
        b"\x00\x00\x01\x00\x00\x00\x00\x00\x03x",  # DATA on a stream never opened
        b"\xff\xff\xff\x00\x00\x00\x00\x00\x01",  # a frame header announcing 16 MiB
    ],
)
def test_http2_protocol_errors(bad: bytes) -> None:
    h2 = raw_server()
    assert decode_error(NAME, [h2.data_to_send() + bad], eof=False).code == (
        ErrorCode.PROTOCOL_ERROR
    )


def test_a_dead_codec_repeats_its_error() -> None:
    h2 = raw_server()
    h2.reset_stream(1, ErrorCodes.CANCEL)
    client = make_client(NAME, FramingOptions())
    client.initiate()
    with pytest.raises(CodecError) as first:
        client.receive_data(h2.data_to_send())
    with pytest.raises(CodecError) as again:
        client.receive_data(b"more")
    with pytest.raises(CodecError) as at_eof:
        client.receive_eof()
    assert again.value is first.value and at_eof.value is first.value


# --- flow control ---------------------------------------------------------------------------------


def test_a_large_stream_blocks_the_server_until_the_client_grants_credit() -> None:
    messages = [Message(bytes([i]) * 65536) for i in range(48)]  # 3 MiB
    client, server = grpc.client(FramingOptions()), grpc.server(FramingOptions())
    server.receive_data(client.initiate())
    for message in messages:
        server.send_message(message)
    server.end()
    assert server.blocked  # the window (1 MiB) is far smaller than the stream
    events: list[Event] = []
    rounds = 0
    while True:
        down = server.data_to_send()
        assert len(down) < 1_100_000  # never more than one window at a time
        events += client.receive_data(down)
        up = client.data_to_send()
        if up:
            server.receive_data(up)
        if not down and not up:
            break
        rounds += 1
    assert rounds > 3 and not server.blocked
    assert events == [*messages, OK]


def test_a_large_stream_through_the_pump() -> None:
    messages = [Message(bytes([i]) * 65536) for i in range(48)]
    wire = wire_of(messages)
    # Offline, the reads must be smaller than half the window: h2 checks each DATA frame
    # against the window before the codec can acknowledge the frames before it.
    reads = split_at(wire, range(0, len(wire), 64 * 1024))
    assert decode(NAME, reads) == [*messages, OK]


def test_a_settings_flood_is_refused_not_answered_at_any_volume() -> None:
    """Each SETTINGS frame asks for an ACK: past ``MAX_ANSWERED`` the service is flooding,
    and the client stops, with what it answered bounded."""
    client = make_client("grpc", FramingOptions())
    client.initiate()
    settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame, stream 0
    answered = 0
    with pytest.raises(CodecError) as err:
        for _ in range(grpc.MAX_ANSWERED + 1):
            client.receive_data(settings)
            answered += len(client.data_to_send())
    assert (err.value.code, err.value.detail) == (
        ErrorCode.PROTOCOL_ERROR,
        f"HTTP/2 flood: more than {grpc.MAX_ANSWERED} SETTINGS and PING frames (a SETTINGS)",
    )
    assert answered == grpc.MAX_ANSWERED * 9  # one 9-byte ACK each, no more
