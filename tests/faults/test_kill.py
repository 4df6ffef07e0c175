"""kill: the bytes before the position, then Close(how); the rest is read and dropped."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import FieldError
from harness.faults.items import Chunk, Close, CloseHow, Heartbeat
from harness.faults.kill import Kill
from harness.faults.position import Position
from tests.faults.conftest import Feed, chunks, closes_of, cut_points, run_fault

DATA = b"abcdefgh"


@pytest.mark.parametrize("how", ["rst", "fin", "half"])
def test_kill_closes_at_the_position(how: CloseHow) -> None:
    run = run_fault(Kill(at=Position(offset=3), how=how), chunks(DATA, 5))
    assert run.items == [Chunk(b"abc", 0), Close(how)]
    assert run.taken == [0.0, 0.0]  # the rest is still read, so the relay is never stuck
    assert run.entries == [("kill", 3, how)]


def test_kill_defaults_to_rst() -> None:
    assert Kill(at=Position(offset=1)).how == "rst"


def test_kill_at_frame_fraction() -> None:
    at = Position(frame=2, fraction=0.5)
    run = run_fault(Kill(at=at), chunks(DATA), spans=[(0, 4), (4, 8)])
    assert run.items == [Chunk(b"abcdef", 0), Close("rst")]


def test_kill_at_zero_closes_before_any_byte() -> None:
    run = run_fault(Kill(at=Position(offset=0)), chunks(DATA))
    assert run.items == [Close("rst")]


def test_kill_at_the_end_replaces_the_graceful_end() -> None:
    run = run_fault(Kill(at=Position(offset=8)), chunks(DATA, 5))
    assert run.items == [Chunk(b"abcde", 0), Chunk(b"fgh", 5), Close("rst")]
    assert run.entries == [("kill", 8, "rst")]


def test_kill_past_the_end_never_fires() -> None:
    run = run_fault(Kill(at=Position(offset=9)), chunks(DATA, 5))
    assert (run.items, run.entries) == (chunks(DATA, 5), [])


def test_kill_closes_at_once_and_drains_later_input() -> None:
    feed: Feed = [(0.0, Chunk(b"abcd", 0)), (1.0, Heartbeat(b"p")), (2.0, Chunk(b"efgh", 4))]
    run = run_fault(Kill(at=Position(offset=2)), feed)
    assert run.out == [(0.0, Chunk(b"ab", 0)), (0.0, Close("rst"))]
    assert run.closed_at == 0.0
    assert run.taken == [0.0, 1.0, 2.0]


def test_kill_after_ms() -> None:
    feed = [(0.0, Chunk(b"ab", 0)), (0.1, Chunk(b"cd", 2)), (0.3, Chunk(b"ef", 4))]
    run = run_fault(Kill(at=Position(after_ms=200), how="fin"), feed)
    assert run.out == [(0.0, Chunk(b"ab", 0)), (0.1, Chunk(b"cd", 2)), (0.2, Close("fin"))]
    assert run.entries == [("kill", 4, "fin")]


def test_kill_after_ms_counts_from_started_at() -> None:
    feed: Feed = [(1.0, Chunk(b"ab", 0)), (1.1, Chunk(b"cd", 2)), (1.3, Chunk(b"ef", 4))]
    run = run_fault(Kill(at=Position(after_ms=200)), feed, started_at=1.0)
    assert run.out == [(1.0, Chunk(b"ab", 0)), (1.1, Chunk(b"cd", 2)), (1.2, Close("rst"))]


def test_kill_after_ms_on_an_empty_stream_never_fires() -> None:
    run = run_fault(Kill(at=Position(after_ms=200)), [])
    assert (run.items, run.entries) == ([], [])


def test_kill_after_an_earlier_close_does_nothing() -> None:
    run = run_fault(Kill(at=Position(offset=5)), [Chunk(b"ab", 0), Close("fin")])
    assert (run.items, run.entries) == ([Chunk(b"ab", 0), Close("fin")], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)), offset=st.integers(0, len(DATA)))
def test_kill_output_does_not_depend_on_input_chunking(cuts: list[int], offset: int) -> None:
    run = run_fault(Kill(at=Position(offset=offset)), chunks(DATA, *cuts))
    assert run.data == DATA[:offset]
    assert closes_of(run.items) == [(offset, Close("rst"))]
    assert isinstance(run.items[-1], Close)


def test_kill_rejects_bad_config() -> None:
    with pytest.raises(FieldError) as caught:
        Kill(at=Position(offset=1), how="abort")  # type: ignore[arg-type]
    assert caught.value.path == ("how",)
