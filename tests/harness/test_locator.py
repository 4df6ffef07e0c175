"""Fault positions resolved against a prepared link, and the ones that cannot exist.

The wire is four length-prefixed messages (``TEXTS``)::

    offset  0  u32 13  "first message"          frame 1: [0, 17)
    offset 17  u32 18  "second: h\\xc3\\xa9llo \\xe2\\x82\\xac"   frame 2: [17, 39)
               (e-acute at 30-31, the euro sign at 36-38)
    offset 39  u32  5  "third"                  frame 3: [39, 48)
    offset 48  u32 15  "fourth and last"        frame 4: [48, 67)
"""

from __future__ import annotations

import pytest

from harness.errors import PositionError, render_path
from harness.faults import BogusLength, DropFrame, Kill, ReorderFrames, Split
from harness.faults.config import Fault
from harness.faults.position import Position
from harness.link.case_wire import check_placeable
from harness.link.live import LinkTraits
from harness.link.locator import (
    PreparedLocator,
    check_positions,
    utf8_char_offset,
)
from harness.link.prepared import prepare
from reference_impl.link import spec as ref_link
from reference_impl.payload import messages
from tests.harness.conftest import prefixed_link

EXPECTED, LOCATOR = prefixed_link()


def test_the_known_wire() -> None:
    assert EXPECTED.spans == ((0, 17), (17, 39), (39, 48), (48, 67))
    assert EXPECTED.wire[30:32] == "\u00e9".encode()
    assert EXPECTED.wire[36:39] == "\u20ac".encode()


@pytest.mark.parametrize(
    ("position", "offset"),
    [
        (Position(offset=0), 0),
        (Position(offset=5), 5),
        (Position(offset=67), 67),  # the very end is a place
        (Position(frame=1), 0),
        (Position(frame=2), 17),
        (Position(frame=4), 48),
        (Position(frame=2, frame_offset=4), 21),
        (Position(frame=2, frame_offset=21), 38),
        (Position(frame=2, fraction=0.0), 17),
        (Position(frame=2, fraction=0.5), 28),
        (Position(frame=2, fraction=1.0), 39),
        (Position(frame=3, fraction=0.5), 43),
        (Position(utf8_char=1), 31),
        (Position(utf8_char=2), 37),
        (Position(utf8_char=2, char_byte=2), 38),
        (Position(match="third"), 43),
        (Position(match="h\u00e9llo"), 29),
        (Position(match="first"), 4),
    ],
)
def test_positions_resolve_to_exact_offsets(position: Position, offset: int) -> None:
    assert LOCATOR.offset(position) == offset


@pytest.mark.parametrize(
    ("position", "path", "message"),
    [
        (Position(offset=68), "offset", "the stream has 67 bytes, not 68"),
        (Position(frame=5), "frame", "the stream has 4 frames, not 5"),
        (Position(frame=2, frame_offset=22), "frame_offset", "frame 2 has 22 bytes on the wire"),
        (Position(utf8_char=3), "utf8_char", "the stream has 2 multi-byte characters, not 3"),
        (Position(utf8_char=1, char_byte=2), "char_byte", "character 1 has 2 bytes"),
        (Position(utf8_char=2, char_byte=3), "char_byte", "character 2 has 3 bytes"),
        (Position(match="nowhere"), "match", "'nowhere' does not occur in the stream"),
        (Position(after_ms=5), "after_ms", "a time position (after_ms) has no byte offset"),
    ],
)
def test_impossible_positions_say_why(position: Position, path: str, message: str) -> None:
    with pytest.raises(PositionError) as caught:
        LOCATOR.offset(position)
    assert (render_path(caught.value.path), caught.value.message) == (path, message)


def test_frame_spans_and_length_fields() -> None:
    assert LOCATOR.frame_span(3) == (39, 48)
    assert LOCATOR.length_field(1) == (0, 4)
    assert LOCATOR.length_field(4) == (48, 4)
    assert EXPECTED.stream_length == 67
    with pytest.raises(PositionError) as caught:
        LOCATOR.frame_span(0)
    assert caught.value.path == ("frame",)


def test_grpc_length_field_is_inside_the_http2_data_frame() -> None:
    spec = ref_link.LinkSpec("grpc", "messages", messages=messages.MessagesSpec(texts=("ab", "cd")))
    expected = prepare(spec)
    locator = PreparedLocator(expected)
    start, _ = expected.spans[1]
    offset, width = locator.length_field(2)
    # A 9-byte HTTP/2 frame header, the compressed flag, then the u32 length.
    assert (offset, width) == (start + 10, 4)
    assert expected.wire[offset : offset + 4 + 2] == b"\x00\x00\x00\x02cd"


def test_a_framing_without_length_prefix_has_no_length_field() -> None:
    spec = ref_link.LinkSpec("ndjson", "messages", messages=messages.MessagesSpec(texts=("a",)))
    locator = PreparedLocator(prepare(spec))
    with pytest.raises(PositionError) as caught:
        locator.length_field(1)
    assert caught.value.path == ("frame",)


def test_a_length_prefix_byte_is_not_a_character() -> None:
    # 197 bytes of payload: the prefix ends in 0xC5, a UTF-8 lead byte followed by "a".
    text = "a" * 195 + "\u00e9"
    spec = ref_link.LinkSpec(
        "length-prefixed", "messages", messages=messages.MessagesSpec(texts=(text,))
    )
    expected = prepare(spec)
    assert expected.wire[:5] == b"\x00\x00\x00\xc5a"
    locator = PreparedLocator(expected)
    assert locator.offset(Position(utf8_char=1)) == 4 + 195 + 1


@pytest.mark.parametrize(
    ("wire", "k", "char_byte", "offset"),
    [
        ("x\u00e9".encode(), 1, 1, 2),
        ("\U0001f680".encode(), 1, 3, 3),
        ("\u00e9\u6f22".encode(), 2, 2, 4),
        (b"\xe2\x82" + "\u00e9".encode(), 1, 1, 3),  # a character cut short is not counted
    ],
)
def test_utf8_char_offset(wire: bytes, k: int, char_byte: int, offset: int) -> None:
    assert utf8_char_offset(wire, k, char_byte) == offset


@pytest.mark.parametrize(
    ("faults", "problem"),
    [
        ((Kill(at=Position(frame=2)), Split(at=Position(after_ms=3))), None),
        ((Split(at=Position(offset=1)), Kill(at=Position(frame=9))), "faults[1].at.frame"),
        ((DropFrame(frame=9),), "faults[0].frame"),
        ((ReorderFrames(frame=1, with_frame=7),), "faults[0].with_frame"),
        ((BogusLength(frame=2, length=2**40),), "faults[0].length"),
        ((BogusLength(frame=5, length=1),), "faults[0].frame"),
        ((Kill(at=Position(match="x"), direction="upstream"),), None),  # found as it passes
        ((Kill(at=Position(frame=1), direction="upstream"),), "faults[0].at.frame"),
        ((Kill(at=Position(offset=3), direction="upstream"),), None),
    ],
)
def test_check_positions_names_the_first_fault_that_cannot_be_placed(
    faults: tuple[Fault, ...], problem: str | None
) -> None:
    found = check_positions(faults, LOCATOR)
    assert (None if found is None else render_path(found.path)) == problem


def test_a_raw_stream_places_everything_but_frames() -> None:
    faults = (
        Kill(at=Position(offset=10**9)),
        Kill(at=Position(match="x")),
        Kill(at=Position(utf8_char=3)),
        DropFrame(frame=1),
    )
    found = check_placeable(faults, LinkTraits())
    assert found is not None
    assert (found.path, found.message) == (
        ("faults", 3, "frame"),
        "frame positions need the link's framing",
    )
    assert check_placeable(faults, LinkTraits("ndjson")) is None
    found = check_placeable((BogusLength(frame=1, length=3),), LinkTraits("ndjson"))
    assert found is not None
    assert found.message == "framing ndjson has no length prefix in frame 1"
