"""split: one read boundary at a position."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from harness.errors import FieldError
from harness.faults.items import Boundary, Chunk, Close, Heartbeat, Item
from harness.faults.position import Position
from harness.faults.split import Split
from tests.faults.conftest import chunks, cut_points, run_fault

DATA = b"abcdefgh"


def test_split_cuts_the_straddling_chunk() -> None:
    run = run_fault(Split(at=Position(offset=3)), chunks(DATA, 5))
    assert run.items == [
        Chunk(b"abc", 0),
        Boundary("split at 3"),
        Chunk(b"de", 3),
        Chunk(b"fgh", 5),
    ]
    assert run.entries == [("split", 3, "read boundary")]


def test_split_at_a_chunk_edge() -> None:
    run = run_fault(Split(at=Position(offset=5)), chunks(DATA, 5))
    assert run.items == [Chunk(b"abcde", 0), Boundary("split at 5"), Chunk(b"fgh", 5)]


def test_split_inside_a_frame() -> None:
    at = Position(frame=2, frame_offset=1)
    run = run_fault(Split(at=at), chunks(DATA), spans=[(0, 4), (4, 8)])
    assert run.items == [Chunk(b"abcde", 0), Boundary("split at 5"), Chunk(b"fgh", 5)]


@pytest.mark.parametrize("offset", [8, 20])
def test_split_at_or_past_the_end_never_fires(offset: int) -> None:
    run = run_fault(Split(at=Position(offset=offset)), chunks(DATA, 5))
    assert run.items == chunks(DATA, 5)
    assert run.entries == []


def test_split_lets_heartbeats_and_a_close_through() -> None:
    feed: list[Item] = [Chunk(b"ab", 0), Heartbeat(b": ping\n\n"), Close("rst")]
    run = run_fault(Split(at=Position(offset=4)), feed)
    assert run.items == feed
    assert run.entries == []


def test_split_after_ms_cuts_between_reads_of_that_time() -> None:
    feed = [(0.0, Chunk(b"ab", 0)), (0.1, Chunk(b"cd", 2)), (0.2, Chunk(b"ef", 4))]
    run = run_fault(Split(at=Position(after_ms=120)), feed, started_at=0.05)
    # started_at + 120 ms = 0.17: after "cd", before "ef"
    assert run.out == [
        (0.0, Chunk(b"ab", 0)),
        (0.1, Chunk(b"cd", 2)),
        (0.2, Boundary("split at 4")),
        (0.2, Chunk(b"ef", 4)),
    ]
    assert run.entries == [("split", 4, "read boundary")]


def test_split_after_ms_past_the_end_never_fires() -> None:
    run = run_fault(Split(at=Position(after_ms=500)), [(0.1, Chunk(b"ab", 0))])
    assert run.items == [Chunk(b"ab", 0)]
    assert run.entries == []


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_split_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault(Split(at=Position(offset=3)), chunks(DATA, *cuts))
    assert run.data == DATA
    assert run.boundaries == [3]


@pytest.mark.parametrize("fields", [{}, {"offset": -1}, {"offset": 1, "frame": 1}])
def test_split_rejects_a_bad_position(fields: dict[str, Any]) -> None:
    with pytest.raises(FieldError):
        Split(at=Position(**fields))
