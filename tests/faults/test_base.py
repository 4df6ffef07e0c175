"""Pure helpers of harness.faults.base: chunk arithmetic, checks, field docs."""

from __future__ import annotations

import math

import pytest

from harness.faults.base import (
    Chunk,
    Position,
    check_position,
    check_range,
    field_docs,
    rewrite_chunk,
    split_chunk,
    split_every,
)
from harness.faults.kill import Kill
from harness.faults.reconnect import Reconnect

CHUNK = Chunk(b"abcdef", 10)


@pytest.mark.parametrize(
    ("offset", "before", "after"),
    [
        (9, None, CHUNK),
        (10, None, CHUNK),
        (11, Chunk(b"a", 10), Chunk(b"bcdef", 11)),
        (15, Chunk(b"abcde", 10), Chunk(b"f", 15)),
        (16, CHUNK, None),
        (99, CHUNK, None),
    ],
)
def test_split_chunk_at_each_place(offset: int, before: Chunk | None, after: Chunk | None) -> None:
    assert split_chunk(CHUNK, offset) == (before, after)


def test_split_chunk_of_empty_chunk_has_no_sides() -> None:
    assert split_chunk(Chunk(b"", 3), 3) == (None, None)


def test_split_every_keeps_offsets_and_a_short_tail() -> None:
    assert split_every(CHUNK, 4) == [Chunk(b"abcd", 10), Chunk(b"ef", 14)]
    assert split_every(CHUNK, 6) == [CHUNK]
    assert split_every(Chunk(b"", 0), 3) == []


def test_rewrite_chunk_changes_only_the_overlap() -> None:
    assert rewrite_chunk(CHUNK, 12, 14, lambda p, old: old ^ 0x20) == (Chunk(b"abCDef", 10), 2)
    assert rewrite_chunk(CHUNK, 14, 30, lambda p, old: p) == (Chunk(b"abcd\x0e\x0f", 10), 2)
    assert rewrite_chunk(CHUNK, 0, 10, lambda p, old: 0) == (CHUNK, 0)
    assert rewrite_chunk(CHUNK, 16, 20, lambda p, old: 0) == (CHUNK, 0)


def test_check_range_names_the_field() -> None:
    check_range("delay_ms", 0, low=0)
    for bad in (-1, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"^delay_ms: "):
            check_range("delay_ms", bad, low=0)
    with pytest.raises(ValueError, match=r"^mask: must be <= 255"):
        check_range("mask", 256, low=1, high=255)


@pytest.mark.parametrize(
    ("position", "field"),
    [
        (Position(), "at"),
        (Position(offset=1, frame=2), "at"),
        (Position(offset=-1), "at.offset"),
        (Position(frame=0), "at.frame"),
        (Position(frame=1, frame_offset=-1), "at.frame_offset"),
        (Position(frame=1, fraction=1.5), "at.fraction"),
        (Position(frame=1, fraction=0.5, frame_offset=1), "at"),
        (Position(offset=1, frame_offset=1), "at"),
        (Position(utf8_char=0), "at.utf8_char"),
        (Position(utf8_char=1, char_byte=0), "at.char_byte"),
        (Position(match=""), "at.match"),
        (Position(after_ms=-5), "at.after_ms"),
        (Position(after_ms=math.nan), "at.after_ms"),
    ],
)
def test_check_position_rejects(position: Position, field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: "):
        check_position(position, time_ok=True)


def test_check_position_accepts_each_placement() -> None:
    for position in (
        Position(offset=0),
        Position(frame=3, fraction=1.0),
        Position(frame=3, frame_offset=2),
        Position(utf8_char=2, char_byte=2),
        Position(match="[DONE]"),
        Position(after_ms=0),
    ):
        check_position(position, time_ok=True)


def test_check_position_rejects_time_when_not_ok() -> None:
    with pytest.raises(ValueError, match=r"^at\.after_ms: "):
        check_position(Position(after_ms=10), time_ok=False)


def test_every_fault_validates_direction_and_connection() -> None:
    with pytest.raises(ValueError, match=r"^direction: "):
        Kill(at=Position(offset=1), direction="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^connection: "):
        Kill(at=Position(offset=1), connection=-1)
    assert Kill(at=Position(offset=1), connection=0, direction="upstream").connection == 0


def test_field_docs_reads_the_class_and_its_bases() -> None:
    docs = field_docs(Reconnect)
    assert list(docs) == ["direction", "connection", "at", "how"]
    assert docs["how"].startswith("how the cut looks: ``fin``")  # the subclass's text wins
    assert docs["connection"].endswith("0 applies it to every connection.")  # continued line
