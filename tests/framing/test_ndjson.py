"""The NDJSON framing: one line per message, LF-terminated, CR before LF tolerated."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.framing import FramingOptions, ndjson
from reference_impl.framing.base import ClientCodec, ServerCodec
from tests.wire import bytewise, decode, decode_error, examples, produce_wire, split_at

NAME = "ndjson"
SMALL = FramingOptions(max_message_bytes=8)
MESSAGES = [
    Message(b'{"n":1}'),
    Message('{"t":"caf\u00e9 \U0001f680 Hello\u2028World"}'.encode()),  # U+2028 is data
    Message(b'"a\rb"'),  # a CR that is not before the LF is data
    Message(b"[" + b"0," * 200 + b"0]"),
]
# Any text without LF that survives the round trip: non-empty, not ending in CR.
LINES = (
    st.text(st.characters(codec="utf-8", exclude_characters="\n"), min_size=1, max_size=30)
    .filter(lambda text: not text.endswith("\r"))
    .map(lambda text: Message(text.encode()))
)


def wire_of(messages: list[Message]) -> bytes:
    request, wire = produce_wire(NAME, messages)
    assert request == b""
    return wire


def test_codecs_satisfy_the_protocols() -> None:
    client: ClientCodec = ndjson.client(FramingOptions())
    server: ServerCodec = ndjson.server(FramingOptions())
    assert client.delimiter == "LF"
    assert (client.initiate(), client.data_to_send(), client.expected_size()) == (b"", b"", None)
    assert (server.ready, server.blocked, server.request_header("x")) == (True, False, None)


def test_wire_is_each_message_then_lf() -> None:
    assert wire_of([Message(b"1"), Message(b"[2]")]) == b"1\n[2]\n"


def test_whole_and_bytewise_input_give_the_same_messages() -> None:
    wire = wire_of(MESSAGES)
    assert decode(NAME, [wire]) == MESSAGES
    assert decode(NAME, bytewise(wire)) == MESSAGES


@examples(150)
@given(
    st.lists(LINES, max_size=8),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_or_merge_gives_the_same_messages(
    messages: list[Message], cuts: list[int]
) -> None:
    assert decode(NAME, split_at(wire_of(messages), cuts)) == messages


def test_eof_at_every_offset_is_clean_only_after_an_lf() -> None:
    messages = [Message(b"[1]"), Message(b'"\xc3\xa9"'), Message(b"{}")]
    wire = wire_of(messages)  # [1]\n"é"\n{}\n
    boundaries = {0: 0, 4: 1, 9: 2, len(wire): 3}  # offset -> messages complete there
    for cut in range(len(wire) + 1):
        if cut in boundaries:
            assert decode(NAME, [wire[:cut]]) == messages[: boundaries[cut]]
        else:
            err = decode_error(NAME, [wire[:cut]])
            assert (err.code, err.at_boundary) == (ErrorCode.FRAME_TRUNCATED, False)


def test_an_unterminated_tail_is_truncation_even_if_it_parses() -> None:
    # Failure catalogue, case 53: {"n":1}\n{"n":123} cut to {"n":1}\n12.
    client = ndjson.client(FramingOptions())
    assert client.receive_data(b'{"n":1}\n12') == [Message(b'{"n":1}')]
    assert client.partial() == b"12"
    with pytest.raises(CodecError) as info:
        client.receive_eof()
    assert (info.value.code, info.value.at_boundary) == (ErrorCode.FRAME_TRUNCATED, False)


def test_crlf_is_accepted_and_stripped_at_every_split() -> None:
    # Failure catalogue, cases 54 and 56: "\r" | "\n" and "\n" | "\n" at every read boundary.
    wire = b"[1]\r\n\r\n[2]\n\n[3]\r\n"
    expected = [Message(b"[1]"), Message(b"[2]"), Message(b"[3]")]
    for cut in range(len(wire) + 1):
        assert decode(NAME, split_at(wire, [cut])) == expected
    assert decode(NAME, bytewise(wire)) == expected


def test_only_one_cr_before_the_lf_is_stripped() -> None:
    assert decode(NAME, [b'"a"\r\r\n']) == [Message(b'"a"\r')]
    assert decode(NAME, [b"\r\n\n\r\n"]) == []  # blank lines only: a clean, empty stream


def test_a_lone_cr_tail_is_truncation() -> None:
    assert decode_error(NAME, [b"[1]\n\r"]).code == ErrorCode.FRAME_TRUNCATED


@pytest.mark.parametrize(
    "line",
    [
        b"\xff",  # never valid
        b'"caf\xc3"',  # a sequence cut short by the end of the line
        b"\xc0\xaf",  # overlong "/"
        b"\xed\xa0\x80",  # UTF-16 surrogate
        b"\xf4\x90\x80\x80",  # above U+10FFFF
    ],
)
def test_invalid_utf8_is_rejected(line: bytes) -> None:
    err = decode_error(NAME, [b"[0]\n" + line + b"\n"], eof=False)
    assert (err.code, err.at_boundary) == (ErrorCode.INVALID_UTF8, False)
    assert decode_error(NAME, bytewise(line + b"\n"), eof=False).code == ErrorCode.INVALID_UTF8


@pytest.mark.parametrize(
    ("wire", "code"),
    [
        (b"\xff\n" + b"x" * 20 + b"\n", ErrorCode.INVALID_UTF8),
        (b"x" * 20 + b"\xff\n", ErrorCode.FRAME_TOO_LARGE),
        (b"[1]\n" + b"x" * 20 + b"\n\xff\n", ErrorCode.FRAME_TOO_LARGE),
    ],
)
def test_the_first_bad_line_decides_whatever_the_reads(wire: bytes, code: ErrorCode) -> None:
    assert decode_error(NAME, [wire], eof=False, options=SMALL).code == code
    assert decode_error(NAME, bytewise(wire), eof=False, options=SMALL).code == code


def test_a_character_split_across_reads_is_fine() -> None:
    # Failure catalogue, case 7: caf\xc3 | \xa9.
    assert decode(NAME, [b'"caf\xc3', b'\xa9"\n']) == [Message('"café"'.encode())]
    assert decode(NAME, [b'"\xf0\x9f', b'\x9a\x80"\n']) == [Message('"🚀"'.encode())]


def test_line_limit_is_inclusive_and_counts_no_terminator() -> None:
    assert decode(NAME, [b"12345678\n"], options=SMALL) == [Message(b"12345678")]
    assert decode(NAME, bytewise(b"12345678\r\n"), options=SMALL) == [Message(b"12345678")]
    err = decode_error(NAME, [b"123456789\n"], eof=False, options=SMALL)
    assert (err.code, err.at_boundary) == (ErrorCode.FRAME_TOO_LARGE, False)


def test_an_oversize_line_fails_before_its_lf_arrives() -> None:
    client = ndjson.client(SMALL)
    client.receive_data(b"12345678")
    with pytest.raises(CodecError) as info:
        client.receive_data(b"9")  # nine bytes of line, none of them a CR: already too long
    assert info.value.code == ErrorCode.FRAME_TOO_LARGE
    with pytest.raises(CodecError) as again:
        client.receive_data(b"\n")
    assert again.value is info.value  # the codec is dead


def test_a_cr_at_the_limit_waits_for_the_next_byte() -> None:
    client = ndjson.client(SMALL)
    assert client.receive_data(b"12345678\r") == []
    with pytest.raises(CodecError) as info:
        client.receive_data(b"x")
    assert info.value.code == ErrorCode.FRAME_TOO_LARGE
    assert decode_error(NAME, [b"x" * 100], eof=False, options=SMALL).code == (
        ErrorCode.FRAME_TOO_LARGE
    )


def test_merged_transfers_keep_their_boundaries() -> None:
    # Seed 000, message merging: "Transfer $10\nTransfer $100" split at "...Transfer $" | "100".
    client = ndjson.client(FramingOptions())
    assert client.receive_data(b"Transfer $10\nTransfer $") == [Message(b"Transfer $10")]
    assert client.receive_data(b"100\n") == [Message(b"Transfer $100")]
    # Without its LF the second transfer is never executed: it is a truncated line.
    err = decode_error(NAME, [b"Transfer $10\nTransfer $", b"100"])
    assert err.code == ErrorCode.FRAME_TRUNCATED


def test_reconnect_starts_a_fresh_codec_at_a_line() -> None:
    # The NDJSON form of catalogue case 58: a cut line, then a new connection.
    assert decode_error(NAME, [b'{"n":"hel']).code == ErrorCode.FRAME_TRUNCATED
    assert decode(NAME, [b'{"n":"world"}\n']) == [Message(b'{"n":"world"}')]


@pytest.mark.parametrize("data", [b"a\nb", b"\n", b"", b'"a"\r'])
def test_server_refuses_messages_that_cannot_round_trip(data: bytes) -> None:
    server = ndjson.server(FramingOptions())
    with pytest.raises(ValueError):
        server.send_message(Message(data))
    assert server.data_to_send() == b""


def test_server_writes_invalid_utf8_for_the_consumer_to_reject() -> None:
    server = ndjson.server(FramingOptions())
    server.send_message(Message(b"\xff"))
    server.end()
    assert server.data_to_send() == b"\xff\n"
