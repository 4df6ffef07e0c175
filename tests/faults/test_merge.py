"""merge: hold bytes from a position, then write them in one send."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.faults.items import Boundary, Chunk, Close, Heartbeat, Item
from harness.faults.merge import Merge, frames_end
from harness.faults.position import Position
from tests.faults.conftest import (
    FakeLocator,
    chunks,
    cut_points,
    newline_frames,
    raises_field,
    run_fault,
)

DATA, SPANS = newline_frames(b"aa", b"bbb", b"cccc", b"d")  # [0,3) [3,7) [7,12) [12,14)
BYTEWISE = chunks(DATA, *range(1, len(DATA)))


def test_merge_frames_into_one_write() -> None:
    fault = Merge(at=Position(frame=2), count_frames=2)
    run = run_fault(fault, BYTEWISE, spans=SPANS)
    assert run.items == [
        *BYTEWISE[:3],
        Chunk(b"bbb\ncccc\n", 3),
        *BYTEWISE[12:],
    ]
    assert run.entries == [("merge", 3, "9 bytes, 1 write")]


def test_merge_counts_the_frame_the_position_falls_in() -> None:
    run = run_fault(Merge(at=Position(offset=4), count_frames=1), BYTEWISE, spans=SPANS)
    assert run.items == [*BYTEWISE[:4], Chunk(b"bb\n", 4), *BYTEWISE[7:]]


def test_merge_by_size() -> None:
    run = run_fault(Merge(at=Position(offset=1), size_bytes=4), BYTEWISE, spans=SPANS)
    assert run.items == [BYTEWISE[0], Chunk(b"a\nbb", 1), *BYTEWISE[5:]]


def test_merge_writes_when_the_last_byte_arrives() -> None:
    feed = [(0.0, Chunk(b"aa\nb", 0)), (0.1, Chunk(b"bb\nc", 4)), (0.2, Chunk(b"ccc\nd\n", 8))]
    run = run_fault(Merge(at=Position(frame=2), count_frames=2), feed, spans=SPANS)
    assert run.out == [
        (0.0, Chunk(b"aa\n", 0)),
        (0.2, Chunk(b"bbb\ncccc\n", 3)),
        (0.2, Chunk(b"d\n", 12)),
    ]


def test_merge_flushes_at_eof() -> None:
    cut_short = BYTEWISE[:9]  # the stream ends inside frame 3
    run = run_fault(Merge(at=Position(frame=2), count_frames=3), cut_short, spans=SPANS)
    assert run.items == [*BYTEWISE[:3], Chunk(b"bbb\ncc", 3)]


def test_merge_past_the_end_never_fires() -> None:
    run = run_fault(Merge(at=Position(offset=14), size_bytes=2), BYTEWISE, spans=SPANS)
    assert run.items == BYTEWISE
    assert run.entries == []


def test_merge_writes_items_that_came_while_holding_after_the_merge() -> None:
    feed: list[Item] = [
        Chunk(b"aa\n", 0),
        Heartbeat(b"p"),
        Chunk(b"bbb\n", 3),
        Boundary(),
        Close("fin"),
    ]
    run = run_fault(Merge(at=Position(offset=0), size_bytes=7), feed, spans=SPANS)
    assert run.items == [Chunk(b"aa\nbbb\n", 0), Heartbeat(b"p"), Boundary(), Close("fin")]


def test_frames_end_counts_frames_ending_after_start() -> None:
    locator = FakeLocator(SPANS)
    assert frames_end(locator, 0, 1) == 3
    assert frames_end(locator, 3, 2) == 12
    assert frames_end(locator, 5, 1) == 7
    assert frames_end(locator, 5, 9) == 14  # fewer frames: up to the last
    assert frames_end(locator, 14, 1) == 14  # no frame left: nothing to hold


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_merge_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    fault = Merge(at=Position(frame=2), count_frames=2)
    run = run_fault(fault, chunks(DATA, *cuts), spans=SPANS)
    assert run.data == DATA
    assert Chunk(b"bbb\ncccc\n", 3) in run.items


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"at": Position(offset=1)}, "count_frames"),
        ({"at": Position(offset=1), "count_frames": 1, "size_bytes": 1}, "count_frames"),
        ({"at": Position(offset=1), "count_frames": 0}, "count_frames"),
        ({"at": Position(offset=1), "size_bytes": 0}, "size_bytes"),
        ({"at": Position(after_ms=5), "size_bytes": 1}, "at.after_ms"),
    ],
)
def test_merge_rejects_bad_config(config: dict[str, object], field: str) -> None:
    with raises_field(field):
        Merge(**config)  # type: ignore[arg-type]
