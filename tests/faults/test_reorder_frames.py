"""reorder_frames: two frames swap places; what lies between stays."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.faults.items import Chunk
from harness.faults.reorder_frames import ReorderFrames
from tests.faults.conftest import chunks, cut_points, newline_frames, raises_field, run_fault

DATA, SPANS = newline_frames(b"a", b"bb", b"ccc", b"dddd")  # [0,2) [2,5) [5,9) [9,14)


def test_reorder_adjacent_frames() -> None:
    run = run_fault(ReorderFrames(frame=2, with_frame=3), chunks(DATA, 4, 9), spans=SPANS)
    assert run.items == [
        Chunk(b"a\n", 0),
        Chunk(b"ccc\n", 5),
        Chunk(b"bb", 2),
        Chunk(b"\n", 4),
        Chunk(b"dddd\n", 9),
    ]
    assert run.entries == [("reorder_frames", 2, "frame 3 before frame 2")]


def test_reorder_far_frames_keeps_the_middle() -> None:
    run = run_fault(ReorderFrames(frame=4, with_frame=1), chunks(DATA), spans=SPANS)
    assert run.data == b"dddd\nbb\nccc\na\n"


def test_reorder_holds_until_the_later_frame_arrives() -> None:
    feed = [(0.0, Chunk(b"a\nbb\n", 0)), (0.5, Chunk(b"ccc\n", 5)), (1.0, Chunk(b"dddd\n", 9))]
    run = run_fault(ReorderFrames(frame=1, with_frame=3), feed, spans=SPANS)
    assert run.out == [
        (0.5, Chunk(b"ccc\n", 5)),
        (0.5, Chunk(b"bb\n", 2)),
        (0.5, Chunk(b"a\n", 0)),
        (1.0, Chunk(b"dddd\n", 9)),
    ]


def test_reorder_cut_short_keeps_the_original_order() -> None:
    run = run_fault(ReorderFrames(frame=2, with_frame=4), chunks(DATA[:12], 3), spans=SPANS)
    assert (run.data, run.entries) == (DATA[:12], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_reorder_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault(ReorderFrames(frame=2, with_frame=3), chunks(DATA, *cuts), spans=SPANS)
    assert run.data == b"a\nccc\nbb\ndddd\n"


@pytest.mark.parametrize(
    ("frame", "with_frame", "field"),
    [(0, 2, "frame"), (2, 0, "with_frame"), (3, 3, "with_frame")],
)
def test_reorder_rejects_bad_frames(frame: int, with_frame: int, field: str) -> None:
    with raises_field(field):
        ReorderFrames(frame=frame, with_frame=with_frame)
