"""duplicate_frame: one frame's bytes written again right after it."""

from __future__ import annotations

from hypothesis import given, settings

from harness.faults.duplicate_frame import DuplicateFrame
from harness.faults.items import Chunk
from tests.faults.conftest import chunks, cut_points, newline_frames, raises_field, run_fault

DATA, SPANS = newline_frames(b"aa", b"bbb", b"cc")  # [0,3) [3,7) [7,10)


def test_duplicate_frame_writes_it_twice() -> None:
    run = run_fault(DuplicateFrame(frame=2), chunks(DATA, 5), spans=SPANS)
    assert run.items == [
        Chunk(b"aa\n", 0),
        Chunk(b"bb", 3),
        Chunk(b"b\n", 5),
        Chunk(b"bbb\n", 3),  # the copy keeps the original's offsets
        Chunk(b"cc\n", 7),
    ]
    assert run.entries == [("duplicate_frame", 7, "frame 2: 4 bytes again")]


def test_duplicate_frame_copies_right_after_the_frame() -> None:
    feed = [(0.0, Chunk(b"aa\nbbb\n", 0)), (1.0, Chunk(b"cc\n", 7))]
    run = run_fault(DuplicateFrame(frame=2), feed, spans=SPANS)
    assert run.times == [0.0, 0.0, 0.0, 1.0]


def test_duplicate_the_last_frame() -> None:
    run = run_fault(DuplicateFrame(frame=3), chunks(DATA), spans=SPANS)
    assert run.data == DATA + b"cc\n"


def test_duplicate_frame_cut_short_is_not_copied() -> None:
    run = run_fault(DuplicateFrame(frame=3), chunks(DATA[:8]), spans=SPANS)
    assert (run.data, run.entries) == (DATA[:8], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_duplicate_frame_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault(DuplicateFrame(frame=1), chunks(DATA, *cuts), spans=SPANS)
    assert run.data == b"aa\naa\nbbb\ncc\n"


def test_duplicate_frame_rejects_frame_zero() -> None:
    with raises_field("frame"):
        DuplicateFrame(frame=0)
