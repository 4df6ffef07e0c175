"""duplicate_frame: one frame's bytes written again right after it."""

from __future__ import annotations

import pytest
import trio.testing
from hypothesis import given, settings

from harness.faults.base import Chunk
from harness.faults.duplicate_frame import DuplicateFrame
from tests.faults.conftest import chunks, cut_points, newline_frames, run_fault, run_fault_sync

DATA, SPANS = newline_frames(b"aa", b"bbb", b"cc")  # [0,3) [3,7) [7,10)


async def test_duplicate_frame_writes_it_twice(autojump_clock: trio.testing.MockClock) -> None:
    run = await run_fault(DuplicateFrame(frame=2), chunks(DATA, 5), spans=SPANS)
    assert run.items == [
        Chunk(b"aa\n", 0),
        Chunk(b"bb", 3),
        Chunk(b"b\n", 5),
        Chunk(b"bbb\n", 3),  # the copy keeps the original's offsets
        Chunk(b"cc\n", 7),
    ]
    assert run.entries == [("duplicate_frame", 7, "frame 2: 4 bytes again")]


async def test_duplicate_frame_copies_right_after_the_frame(
    autojump_clock: trio.testing.MockClock,
) -> None:
    feed = [(0.0, Chunk(b"aa\nbbb\n", 0)), (1.0, Chunk(b"cc\n", 7))]
    run = await run_fault(DuplicateFrame(frame=2), feed, spans=SPANS)
    assert run.times == [0.0, 0.0, 0.0, 1.0]


async def test_duplicate_the_last_frame(autojump_clock: trio.testing.MockClock) -> None:
    run = await run_fault(DuplicateFrame(frame=3), chunks(DATA), spans=SPANS)
    assert run.data == DATA + b"cc\n"


async def test_duplicate_frame_cut_short_is_not_copied(
    autojump_clock: trio.testing.MockClock,
) -> None:
    run = await run_fault(DuplicateFrame(frame=3), chunks(DATA[:8]), spans=SPANS)
    assert (run.data, run.entries) == (DATA[:8], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_duplicate_frame_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault_sync(DuplicateFrame(frame=1), chunks(DATA, *cuts), spans=SPANS)
    assert run.data == b"aa\naa\nbbb\ncc\n"


def test_duplicate_frame_rejects_frame_zero() -> None:
    with pytest.raises(ValueError, match=r"^frame: "):
        DuplicateFrame(frame=0)
