"""The WHATWG event-stream parser on its own: failure catalogue section A, WPT-style BOM cases,
the id/retry rules, the size cap, and split invariance (whole, bytewise, Hypothesis)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.framing.sse_parser import EventStreamParser
from tests.wire import bytewise, examples, split_at

BIG = 1 << 20


def feed(pieces: Iterable[bytes], max_bytes: int = BIG) -> tuple[list[Message], EventStreamParser]:
    parser = EventStreamParser(max_bytes)
    messages: list[Message] = []
    for piece in pieces:
        messages += parser.feed(piece)
    return messages, parser


def parse(stream: bytes, max_bytes: int = BIG) -> list[Message]:
    """Messages of ``stream``, checked to be the same whole and one byte at a time."""
    whole, whole_parser = feed([stream], max_bytes)
    single, single_parser = feed(bytewise(stream), max_bytes)
    assert single == whole
    assert single_parser.partial() == whole_parser.partial()
    assert single_parser.last_event_id == whole_parser.last_event_id
    return whole


def error(stream: bytes, max_bytes: int = BIG) -> ErrorCode:
    """The error code of ``stream``, checked to be the same whole and one byte at a time."""
    codes = []
    for pieces in ([stream], bytewise(stream)):
        with pytest.raises(CodecError) as info:
            feed(pieces, max_bytes)
        assert info.value.at_boundary is False
        codes.append(info.value.code)
    assert codes[0] == codes[1]
    return codes[0]


def datas(stream: bytes) -> list[bytes]:
    return [m.data for m in parse(stream)]


# --- catalogue section A ------------------------------------------------------------------------


def test_case1_incomplete_final_event_is_not_dispatched() -> None:
    stream = b'data: one\n\ndata: {"partial": tr'
    messages, parser = feed([stream])
    assert messages == [Message(b"one")]
    assert parser.in_progress
    assert parser.partial() == b'data: {"partial": tr'


def test_case2_terminator_split_from_its_event() -> None:
    parser = EventStreamParser(BIG)
    assert parser.feed(b"id: 7\ndata: x\n") == []
    assert parser.in_progress
    assert parser.partial() == b"id: 7\ndata: x\n"
    assert parser.last_event_id == ""  # not committed before the blank line
    assert parser.feed(b"\n") == [Message(b"x", id="7")]
    assert parser.last_event_id == "7"
    assert not parser.in_progress
    assert parser.partial() == b""


def test_case2_wpt_data_before_final_empty_line() -> None:
    messages, parser = feed([b"retry:1000\ndata:test1\n\nid:test\ndata:test2"])
    assert messages == [Message(b"test1")]
    assert parser.last_event_id == ""
    assert parser.retry_ms == 1000
    assert parser.in_progress


def test_case3_crlf_split_across_reads() -> None:
    messages, parser = feed([b"data: A\r\ndata: B\r", b"\ndata: C\r\n\r\n"])
    assert messages == [Message(b"A\nB\nC")]
    assert parser.partial() == b""


def test_case3_held_cr_belongs_to_the_partial() -> None:
    parser = EventStreamParser(BIG)
    parser.feed(b"data: A\r")
    assert parser.partial() == b"data: A\r"
    parser.feed(b"\n")
    assert parser.partial() == b"data: A\r\n"
    assert parser.feed(b"\r") == [Message(b"A")]
    assert parser.feed(b"\ndata: B\n\n") == [Message(b"B")]


@pytest.mark.parametrize("stream", [b"data: a\rdata: b\r\r", b"data: a\r\ndata: b\n\r"])
def test_case4_cr_only_and_mixed_endings(stream: bytes) -> None:
    assert datas(stream) == [b"a\nb"]


@pytest.mark.parametrize(
    "char", [b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85", b"\x0b", b"\x0c", b"\x1c", b"\x1e"]
)
def test_case5_only_cr_and_lf_end_lines(char: bytes) -> None:
    body = b'{"t":"Hello' + char + b'World"}'
    assert datas(b"data: " + body + b"\n\n") == [body]


def test_case6_always_utf8() -> None:
    body = '{"t":"## \u2705 ok"}'.encode()
    assert datas(b"data: " + body + b"\n\n") == [body]


@pytest.mark.parametrize(
    ("pieces", "text"),
    [
        ([b"data: caf\xc3", b"\xa9\n\n"], "caf\u00e9"),
        ([b"data: \xf0\x9f", b"\x9a\x80\n\n"], "\U0001f680"),
    ],
)
def test_case7_multibyte_character_split(pieces: list[bytes], text: str) -> None:
    assert feed(pieces)[0] == [Message(text.encode())]


def test_case7_dangling_sequence_at_the_tail_is_part_of_the_partial() -> None:
    messages, parser = feed([b"data: a\n\ndata: caf\xc3"])
    assert messages == [Message(b"a")]
    assert parser.in_progress
    assert parser.partial() == b"data: caf\xc3"


def test_case8_wpt_bom_split() -> None:
    messages, _ = feed([b"\xef", b"\xbb\xbfdata:1\n\ndata:2\n\n"])
    assert messages == [Message(b"1"), Message(b"2")]


def test_case8_bom_at_every_split() -> None:
    stream = b"\xef\xbb\xbfdata:1\n\ndata:2\n\n"
    for cut in range(len(stream) + 1):
        assert feed(split_at(stream, [cut]))[0] == [Message(b"1"), Message(b"2")]
    assert datas(stream) == [b"1", b"2"]


def test_case8_wpt_bom_2_only_one_is_stripped() -> None:
    # The second BOM is U+FEFF in the field name "\ufeffdata": an unknown field, no data.
    assert datas(b"\xef\xbb\xbf\xef\xbb\xbfdata:1\n\ndata:2\n\n") == [b"2"]


def test_case8_bom_later_in_the_stream_is_not_stripped() -> None:
    assert datas(b"data:1\n\n\xef\xbb\xbfdata:2\n\ndata:3\n\n") == [b"1", b"3"]


def test_case8_utf16_bom_fails_instead_of_being_replaced() -> None:
    # WHATWG decodes it as U+FFFD U+FFFD and skips the field; we refuse invalid UTF-8.
    assert error(b"\xff\xfedata:1\n\ndata:2\n\n") == ErrorCode.INVALID_UTF8


def test_case8_partial_bom_is_in_progress() -> None:
    _, parser = feed([b"\xef\xbb"])
    assert parser.in_progress
    assert parser.partial() == b"\xef\xbb"
    _, parser = feed([b"\xef\xbb\xbf"])
    assert not parser.in_progress
    assert parser.partial() == b""
    assert error(b"\xef\xbbdata: x\n\n") == ErrorCode.INVALID_UTF8


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"data:x\n\n", [b"x"]),
        (b"data: x\n\n", [b"x"]),
        (b"data:  x\n\n", [b" x"]),  # only one space is stripped
        (b"data\n\n", [b""]),  # no colon: a field with an empty value
        (b"data:\n\n", [b""]),
        (b":comment\ndata: x\n: another\n\n", [b"x"]),
        (b"foo: bar\ndata: x\nDATA: y\n\n", [b"x"]),  # unknown fields, names are case-sensitive
        (b"data: a\ndata: b\n\n", [b"a\nb"]),
        (b"data: a\ndata:\n\n", [b"a\n"]),  # only the final LF is removed
        (b"data: a:b: c\n\n", [b"a:b: c"]),  # the first colon separates
        (b"data\ndata\n\n", [b"\n"]),
    ],
)
def test_case9_field_parsing(stream: bytes, expected: list[bytes]) -> None:
    assert datas(stream) == expected


@pytest.mark.parametrize(
    "stream",
    [
        b"id: 1\n\n",
        b": ping\n\n",
        b"event: x\n\n",
        b"\n\n\n",
        b"id: 1\n\n: ping\n\n",
        b"retry: 5\n\n",
    ],
)
def test_case9_no_data_no_dispatch(stream: bytes) -> None:
    # openai 3.57.0 dispatched an empty event here once an id had been seen (#2722).
    assert parse(stream) == []


def test_case9_event_type_resets_even_without_dispatch() -> None:
    stream = b"event: a\n\ndata: x\n\nevent: b\ndata: y\n\ndata: z\n\n"
    assert parse(stream) == [Message(b"x"), Message(b"y", kind="b"), Message(b"z")]


def test_default_type_is_reported_as_empty_kind() -> None:
    assert parse(b"event: message\ndata: x\n\nevent:\ndata: y\n\n") == [
        Message(b"x", kind="message"),
        Message(b"y"),
    ]


def test_case10_id_rules() -> None:
    stream = (
        b"id: 1\ndata: a\n\n"  # sets 1
        b"data: b\n\n"  # persists
        b"id: x\x00y\ndata: c\n\n"  # contains NUL: ignored
        b"id\ndata: d\n\n"  # no colon: reset to ""
        b"id: 2\ndata: e\n\n"
        b"id:\ndata: f\n\n"  # empty: reset to ""
        b"id: \xc3\xa9t\xc3\xa9\ndata: g\n\n"
    )
    assert [(m.data, m.id) for m in parse(stream)] == [
        (b"a", "1"),
        (b"b", "1"),
        (b"c", "1"),
        (b"d", ""),
        (b"e", "2"),
        (b"f", ""),
        (b"g", "\u00e9t\u00e9"),
    ]


def test_case10_id_without_data_is_committed_at_the_blank_line() -> None:
    messages, parser = feed([b"id: 5\n\n"])
    assert messages == []
    assert parser.last_event_id == "5"
    assert parse(b"id: 5\n\ndata: x\n\n") == [Message(b"x", id="5")]


@pytest.mark.parametrize(
    "value",
    [b"10s", b"-1", b"+5", b"1_000", b" 5", b"", b"1 ", b"\xd9\xa3", b"1" * 19, b"0x10"],
)
def test_case11_retry_ascii_digits_only(value: bytes) -> None:
    _, parser = feed([b"retry: 250\n\nretry: " + value + b"\n\n"])
    assert parser.retry_ms == 250


def test_case11_retry_valid_values() -> None:
    _, parser = feed([b"retry: 0\n\n"])
    assert parser.retry_ms == 0
    _, parser = feed([b"retry:1000\nretry: 007\n\n"])
    assert parser.retry_ms == 7
    _, parser = feed([b"data: x\n\n"])
    assert parser.retry_ms is None


def test_case12_oversized_line_fails_before_it_ends() -> None:
    parser = EventStreamParser(524_288)
    line = b"data: " + b"x" * 600_000
    chunks = [line[i : i + 65536] for i in range(0, len(line), 65536)]
    with pytest.raises(CodecError) as info:
        for chunk in chunks:
            parser.feed(chunk)
    assert info.value.code == ErrorCode.FRAME_TOO_LARGE
    assert chunk is chunks[8]  # 9 x 64 KiB = 589,824 > 524,288 + 6


@pytest.mark.parametrize(
    "template",
    [b"data: %s\n\n", b"data:%s\n\n", b"event: t\nid: 9\ndata: %s\r\n\r\n"],
)
def test_case12_cap_is_exact_on_message_size(template: bytes) -> None:
    # The cap is on the message: "data:" prefixes and line ends cost nothing.
    assert [m.data for m in parse(template % (b"x" * 32), max_bytes=32)] == [b"x" * 32]
    assert error(template % (b"x" * 33), max_bytes=32) == ErrorCode.FRAME_TOO_LARGE


def test_case12_cap_counts_joined_lines() -> None:
    stream = b"data: abcd\ndata: efgh\ndata: i\n\n"  # "abcd\nefgh\ni": 11 bytes
    assert parse(stream, max_bytes=11) == [Message(b"abcd\nefgh\ni")]
    assert error(stream, max_bytes=10) == ErrorCode.FRAME_TOO_LARGE
    assert parse(b"data\n" * 5 + b"\n", max_bytes=4) == [Message(b"\n\n\n\n")]
    assert error(b"data\n" * 6 + b"\n", max_bytes=4) == ErrorCode.FRAME_TOO_LARGE


def test_case12_other_lines_are_capped_too() -> None:
    assert (
        error(b"event: " + b"e" * 20 + b"\ndata: x\n\n", max_bytes=16) == ErrorCode.FRAME_TOO_LARGE
    )
    assert error(b"data: x\n" + b": c\n" * 10 + b"\n", max_bytes=16) == ErrorCode.FRAME_TOO_LARGE
    assert error(b": " + b"c" * 20, max_bytes=16) == ErrorCode.FRAME_TOO_LARGE


def test_case12_heartbeats_between_events_never_accumulate() -> None:
    assert parse(b": ping\n" * 200 + b"data: x\n\n", max_bytes=8) == [Message(b"x")]


def test_case13_merged_events() -> None:
    assert datas(b"data: a\n\ndata: b\n\n") == [b"a", b"b"]


def test_case14_json_split_inside_an_event() -> None:
    pieces = [b'data: {"candidates": [{"content": {"parts": [{"te', b'xt": "!"}]}}]}\n\n']
    assert feed(pieces)[0] == [
        Message(b'{"candidates": [{"content": {"parts": [{"text": "!"}]}}]}')
    ]


@pytest.mark.parametrize(
    "stream",
    [
        b"data: \xff\n\n",
        b": \xc3\x28\n\n",
        b"ev\xe9nt: x\ndata: y\n\n",
        b"data: a\n\ndata: \xed\xa0\x80\n\n",  # a UTF-16 surrogate, not UTF-8
        b"data: caf\xc3\n\n",  # a sequence cut by the line end
    ],
)
def test_invalid_utf8_in_a_complete_line(stream: bytes) -> None:
    assert error(stream) == ErrorCode.INVALID_UTF8


def test_errors_come_in_stream_order() -> None:
    too_large_first = b"data: " + b"x" * 20 + b"\ndata: \xff\n\n"
    assert error(too_large_first, max_bytes=16) == ErrorCode.FRAME_TOO_LARGE
    invalid_first = b"data: \xff\ndata: " + b"x" * 20 + b"\n\n"
    assert error(invalid_first, max_bytes=16) == ErrorCode.INVALID_UTF8


def test_partial_tracks_the_event_in_flight() -> None:
    parser = EventStreamParser(BIG)
    parser.feed(b": hb\n")
    assert parser.partial() == b""  # a heartbeat opens no event
    parser.feed(b": h")
    assert not parser.in_progress
    parser.feed(b"b\nid: 3\r\n: inner\ndata: x")
    assert parser.partial() == b"id: 3\r\ndata: x"  # a comment inside is no byte of the event
    parser.feed(b"\r\n\r\n")
    assert parser.partial() == b""


# --- split invariance -----------------------------------------------------------------------


TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\0"))
LINE_ENDS = st.sampled_from([b"\n", b"\r", b"\r\n"])


@st.composite
def event_streams(draw: st.DrawFn) -> tuple[bytes, list[Message], bytes]:
    """A stream of events with every field kind and line ending, maybe an event left open at
    the end; the messages it carries, and the ``partial()`` it leaves."""
    stream, messages, last_id = bytearray(), [], ""
    for _ in range(draw(st.integers(0, 5))):
        lines: list[bytes] = []
        if draw(st.booleans()):
            lines.append(b": " + draw(TEXT).encode())
        kind = draw(TEXT) if draw(st.booleans()) else ""
        if kind:
            lines.append(b"event: " + kind.encode())
        if draw(st.booleans()):
            last_id = draw(TEXT)
            lines.append(b"id: " + last_id.encode())
        data_lines = draw(st.lists(TEXT, max_size=3))
        lines += [b"data: " + line.encode() for line in data_lines]
        lines.append(b"")
        for line in lines:
            end = draw(LINE_ENDS)
            if not line and stream.endswith(b"\r") and end.startswith(b"\n"):
                end = b"\r"  # CR then LF would be one line end, swallowing the blank line
            stream += line + end
        if data_lines:
            messages.append(Message("\n".join(data_lines).encode(), kind, last_id))
    tail, partial = draw(open_event())
    return bytes(stream) + tail, messages, partial


@st.composite
def open_event(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """Lines of an event whose blank line never comes, the last one maybe unterminated; and
    its ``partial()``: every field line with its line end, not the comments, then the tail."""
    wire, partial = b"", b""
    for comment in draw(st.lists(st.booleans(), max_size=3)):
        line = (b": " if comment else b"data: ") + draw(TEXT).encode()
        end = draw(LINE_ENDS)
        wire += line + end
        partial += b"" if comment else line + end
    tail = draw(st.sampled_from([b"", b"data: cut", b": cut", b"id: 9"]))
    if not partial and tail[:1] in (b"", b":"):
        return wire + tail, b""  # comments alone open no event (heartbeats)
    return wire + tail, partial + tail


@examples(150)
@given(event_streams(), st.lists(st.integers(0, 400), max_size=8))
# a CRLF split after a comment line added its LF to partial() (bytewise only)
@example(sample=(b"data: x\n: 0\r\n", [], b"data: x\n"), cuts=[])
def test_any_split_gives_the_same_events(
    sample: tuple[bytes, list[Message], bytes], cuts: list[int]
) -> None:
    stream, expected, partial = sample
    assert parse(stream) == expected
    split, parser = feed(split_at(stream, cuts))
    assert split == expected
    assert parser.partial() == partial
    assert parser.in_progress is bool(partial)
