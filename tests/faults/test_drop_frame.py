"""drop_frame: every byte of one frame removed; nothing else changes."""

from __future__ import annotations

import pytest
import trio.testing
from hypothesis import given, settings

from harness.faults.base import Chunk, Heartbeat, Item
from harness.faults.drop_frame import DropFrame
from tests.faults.conftest import chunks, cut_points, newline_frames, run_fault, run_fault_sync

DATA, SPANS = newline_frames(b"aa", b"bbb", b"cc")  # [0,3) [3,7) [7,10)


async def test_drop_frame_removes_its_bytes(autojump_clock: trio.testing.MockClock) -> None:
    run = await run_fault(DropFrame(frame=2), chunks(DATA, 4, 8), spans=SPANS)
    assert run.items == [Chunk(b"aa\n", 0), Chunk(b"c", 7), Chunk(b"c\n", 8)]
    assert run.entries == [("drop_frame", 3, "frame 2: 4 bytes dropped")]


async def test_drop_frame_keeps_heartbeats_inside_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    feed: list[Item] = [Chunk(b"aa\nbb", 0), Heartbeat(b"p"), Chunk(b"b\ncc\n", 5)]
    run = await run_fault(DropFrame(frame=2), feed, spans=SPANS)
    assert run.items == [Chunk(b"aa\n", 0), Heartbeat(b"p"), Chunk(b"cc\n", 7)]


async def test_drop_frame_first_and_last(autojump_clock: trio.testing.MockClock) -> None:
    first = await run_fault(DropFrame(frame=1), chunks(DATA), spans=SPANS)
    last = await run_fault(DropFrame(frame=3), chunks(DATA), spans=SPANS)
    assert (first.data, last.data) == (b"bbb\ncc\n", b"aa\nbbb\n")


async def test_drop_frame_the_stream_never_reached(
    autojump_clock: trio.testing.MockClock,
) -> None:
    run = await run_fault(DropFrame(frame=3), chunks(DATA[:7]), spans=SPANS)
    assert (run.data, run.entries) == (DATA[:7], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_drop_frame_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault_sync(DropFrame(frame=2), chunks(DATA, *cuts), spans=SPANS)
    assert run.data == b"aa\ncc\n"
    assert run.entries == [("drop_frame", 3, "frame 2: 4 bytes dropped")]


def test_drop_frame_rejects_frame_zero() -> None:
    with pytest.raises(ValueError, match=r"^frame: "):
        DropFrame(frame=0)
