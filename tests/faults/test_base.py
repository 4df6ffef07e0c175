"""What every fault shares: chunk arithmetic, position rules, field checks, field docs."""

from __future__ import annotations

import math

import pytest

from harness.config.docs import field_docs
from harness.errors import FieldError
from harness.faults.items import Chunk, rewrite_chunk, split_chunk, split_every
from harness.faults.kill import Kill
from harness.faults.merge import Merge
from harness.faults.position import Position
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


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({}, ()),
        ({"offset": 1, "frame": 2}, ()),
        ({"offset": -1}, ("offset",)),
        ({"frame": 0}, ("frame",)),
        ({"frame": 1, "frame_offset": -1}, ("frame_offset",)),
        ({"frame": 1, "fraction": 1.5}, ("fraction",)),
        ({"frame": 1, "fraction": 0.5, "frame_offset": 1}, ("fraction",)),
        ({"offset": 1, "frame_offset": 1}, ("frame_offset",)),
        ({"utf8_char": 0}, ("utf8_char",)),
        ({"utf8_char": 1, "char_byte": 0}, ("char_byte",)),
        ({"match": ""}, ("match",)),
        ({"after_ms": -5}, ("after_ms",)),
        ({"after_ms": math.nan}, ("after_ms",)),
        ({"offset": 2**40}, ("offset",)),
    ],
)
def test_a_position_checks_itself(fields: dict[str, object], path: tuple[str, ...]) -> None:
    with pytest.raises(FieldError) as caught:
        Position(**fields)  # type: ignore[arg-type]
    assert caught.value.path == path


def test_every_placement_is_a_position() -> None:
    for position in (
        Position(offset=0),
        Position(frame=3, fraction=1.0),
        Position(frame=3, frame_offset=2),
        Position(utf8_char=2, char_byte=2),
        Position(match="[DONE]"),
        Position(after_ms=0),
    ):
        assert position.anchor in ("offset", "frame", "utf8_char", "match", "after_ms")


def test_a_fault_that_needs_bytes_refuses_a_time() -> None:
    with pytest.raises(FieldError) as caught:
        Merge(at=Position(after_ms=10), count_frames=1)
    assert caught.value.path == ("at", "after_ms")


def test_every_fault_validates_direction_and_connection() -> None:
    with pytest.raises(FieldError) as caught:
        Kill(at=Position(offset=1), direction="sideways")  # type: ignore[arg-type]
    assert caught.value.path == ("direction",)
    with pytest.raises(FieldError) as caught:
        Kill(at=Position(offset=1), connection=-1)
    assert caught.value.path == ("connection",)
    assert Kill(at=Position(offset=1), connection=0, direction="upstream").connection == 0


def test_field_docs_reads_the_class_and_its_bases() -> None:
    docs = field_docs(Reconnect)
    assert list(docs) == ["direction", "connection", "request", "at", "how"]
    assert docs["how"].startswith("how the cut looks: ``fin``")  # the subclass's text wins
    assert docs["connection"].endswith("0 applies it to every connection.")  # continued line
