"""The length-prefixed framing: u32 big-endian length, then the payload."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.framing import FramingOptions, length_prefixed
from reference_impl.framing.base import ClientCodec, ServerCodec
from tests.wire import bytewise, decode, decode_error, examples, produce_wire, split_at

NAME = "length-prefixed"
SMALL = FramingOptions(max_message_bytes=10)
MESSAGES = [Message(b"hello"), Message(b""), Message(b"\x00\n\r\xff"), Message(b"x" * 300)]


def wire_of(messages: list[Message]) -> bytes:
    request, wire = produce_wire(NAME, messages)
    assert request == b""
    return wire


def header(size: int) -> bytes:
    return size.to_bytes(4, "big")


def test_codecs_satisfy_the_protocols() -> None:
    client: ClientCodec = length_prefixed.client(FramingOptions())
    server: ServerCodec = length_prefixed.server(FramingOptions())
    assert client.delimiter == "u32be-length-prefix"
    assert (client.initiate(), client.data_to_send()) == (b"", b"")
    assert (server.ready, server.blocked, server.request_header("x")) == (True, False, None)


def test_wire_is_header_then_payload() -> None:
    assert wire_of([Message(b"hello"), Message(b"")]) == header(5) + b"hello" + header(0)


def test_whole_and_bytewise_input_give_the_same_messages() -> None:
    wire = wire_of(MESSAGES)
    assert decode(NAME, [wire]) == MESSAGES
    assert decode(NAME, bytewise(wire)) == MESSAGES


@examples(150)
@given(
    st.lists(st.binary(max_size=40).map(Message), max_size=8),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_or_merge_gives_the_same_messages(
    messages: list[Message], cuts: list[int]
) -> None:
    assert decode(NAME, split_at(wire_of(messages), cuts)) == messages


def test_eof_at_every_offset_is_clean_only_at_a_boundary() -> None:
    messages = [Message(b"ab"), Message(b""), Message(b"cde")]
    wire = wire_of(messages)
    boundaries = {0: 0, 6: 1, 10: 2, len(wire): 3}  # offset -> messages complete there
    for cut in range(len(wire) + 1):
        if cut in boundaries:
            assert decode(NAME, [wire[:cut]]) == messages[: boundaries[cut]]
        else:
            err = decode_error(NAME, [wire[:cut]])
            assert (err.code, err.at_boundary) == (ErrorCode.FRAME_TRUNCATED, False)


def test_eof_inside_header_and_inside_body_are_truncation() -> None:
    # Failure catalogue, case 57.
    assert decode_error(NAME, [b"\x00\x00"]).code == ErrorCode.FRAME_TRUNCATED
    assert decode_error(NAME, [header(10) + b"hel"]).code == ErrorCode.FRAME_TRUNCATED
    assert decode(NAME, [header(3) + b"hel"]) == [Message(b"hel")]


def test_bogus_length_fails_as_soon_as_the_header_is_known() -> None:
    client = length_prefixed.client(FramingOptions())
    assert client.receive_data(b'{"j') == []
    with pytest.raises(CodecError) as info:
        client.receive_data(b"s")  # 0x7B226A73: JSON read as a length (catalogue, case 41)
    assert (info.value.code, info.value.at_boundary) == (ErrorCode.FRAME_TOO_LARGE, False)
    # Nothing of the body was waited for or buffered.
    assert (client.partial(), client.expected_size()) == (b"", 0x7B226A73)


def test_limit_is_inclusive() -> None:
    assert decode(NAME, [header(10) + b"0123456789"], options=SMALL) == [Message(b"0123456789")]
    err = decode_error(NAME, [header(11)], eof=False, options=SMALL)
    assert err.code == ErrorCode.FRAME_TOO_LARGE
    assert decode_error(NAME, [b"\xff\xff\xff\xff"], eof=False).code == ErrorCode.FRAME_TOO_LARGE


def test_a_dead_codec_repeats_its_error() -> None:
    client = length_prefixed.client(SMALL)
    with pytest.raises(CodecError) as first:
        client.receive_data(header(99))
    with pytest.raises(CodecError) as again:
        client.receive_data(header(1))
    with pytest.raises(CodecError) as at_eof:
        client.receive_eof()
    assert first.value.code == ErrorCode.FRAME_TOO_LARGE
    assert again.value is first.value and at_eof.value is first.value


def test_partial_and_expected_size_track_the_message_in_flight() -> None:
    client = length_prefixed.client(FramingOptions())
    wire = header(3) + b"abc"
    seen: list[tuple[bytes, int | None]] = []
    for piece in bytewise(wire):
        client.receive_data(piece)
        seen.append((client.partial(), client.expected_size()))
    assert seen == [
        (b"\x00", None),  # inside the header: the raw header bytes so far
        (b"\x00\x00", None),
        (b"\x00\x00\x00", None),
        (b"", 3),  # header complete, no body yet
        (b"a", 3),
        (b"ab", 3),
        (b"", None),  # message delivered: back at a boundary
    ]


def test_merged_transfers_keep_their_boundaries() -> None:
    # Seed 000, message merging: the read boundary falls at "...Transfer $" | "100".
    messages = [Message(b"Transfer $10"), Message(b"Transfer $100")]
    wire = wire_of(messages)
    cut = wire.index(b"100")
    assert wire[:cut].endswith(b"Transfer $")
    client = length_prefixed.client(FramingOptions())
    assert client.receive_data(wire[:cut]) == [Message(b"Transfer $10")]
    assert client.receive_data(wire[cut:]) == [Message(b"Transfer $100")]
    assert client.receive_eof() == []


def test_reconnect_starts_a_fresh_codec_at_a_header() -> None:
    # Failure catalogue, case 58: 00 00 00 0a hello FIN, then a new connection sends world.
    first, second = header(10) + b"hello", header(5) + b"world"
    assert decode_error(NAME, [first]).code == ErrorCode.FRAME_TRUNCATED
    assert decode(NAME, [second]) == [Message(b"world")]
    # Why the reset matters: carrying the stale partial over fuses the two connections, then
    # reads the rest of "world" as a length.
    stale = length_prefixed.client(FramingOptions())
    assert stale.receive_data(first) == []
    assert stale.receive_data(second[:5]) == [Message(b"hello\x00\x00\x00\x05w")]
    with pytest.raises(CodecError) as info:
        stale.receive_data(second[5:])  # b"orld" = 0x6F726C64 bytes declared
    assert info.value.code == ErrorCode.FRAME_TOO_LARGE


def test_server_leaves_the_limit_to_the_consumer() -> None:
    # A scenario may send a message above the consumer's limit on purpose.
    server = length_prefixed.server(SMALL)
    server.send_message(Message(b"x" * 11))
    assert server.data_to_send() == header(11) + b"x" * 11
    server.end()
    assert server.data_to_send() == b""
    assert decode_error(NAME, [header(11) + b"x" * 11], options=SMALL).code == (
        ErrorCode.FRAME_TOO_LARGE
    )
