"""drop_frame: every byte of one frame removed; nothing else changes."""

from __future__ import annotations

from hypothesis import given, settings

from harness.faults.drop_frame import DropFrame
from harness.faults.items import Chunk, Heartbeat, Item
from tests.faults.conftest import chunks, cut_points, newline_frames, raises_field, run_fault

DATA, SPANS = newline_frames(b"aa", b"bbb", b"cc")  # [0,3) [3,7) [7,10)


def test_drop_frame_removes_its_bytes() -> None:
    run = run_fault(DropFrame(frame=2), chunks(DATA, 4, 8), spans=SPANS)
    assert run.items == [Chunk(b"aa\n", 0), Chunk(b"c", 7), Chunk(b"c\n", 8)]
    assert run.entries == [("drop_frame", 3, "frame 2: 4 bytes dropped")]


def test_drop_frame_keeps_heartbeats_inside_it() -> None:
    feed: list[Item] = [Chunk(b"aa\nbb", 0), Heartbeat(b"p"), Chunk(b"b\ncc\n", 5)]
    run = run_fault(DropFrame(frame=2), feed, spans=SPANS)
    assert run.items == [Chunk(b"aa\n", 0), Heartbeat(b"p"), Chunk(b"cc\n", 7)]


def test_drop_frame_first_and_last() -> None:
    first = run_fault(DropFrame(frame=1), chunks(DATA), spans=SPANS)
    last = run_fault(DropFrame(frame=3), chunks(DATA), spans=SPANS)
    assert (first.data, last.data) == (b"bbb\ncc\n", b"aa\nbbb\n")


def test_drop_frame_the_stream_never_reached() -> None:
    run = run_fault(DropFrame(frame=3), chunks(DATA[:7]), spans=SPANS)
    assert (run.data, run.entries) == (DATA[:7], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_drop_frame_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault(DropFrame(frame=2), chunks(DATA, *cuts), spans=SPANS)
    assert run.data == b"aa\ncc\n"
    assert run.entries == [("drop_frame", 3, "frame 2: 4 bytes dropped")]


def test_drop_frame_rejects_frame_zero() -> None:
    with raises_field("frame"):
        DropFrame(frame=0)
