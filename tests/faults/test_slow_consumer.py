"""slow_consumer: stop pulling, then pull slowly; the producer feels it as backpressure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.faults.items import Chunk
from harness.faults.position import Position
from harness.faults.slow_consumer import SlowConsumer
from tests.faults.conftest import chunks, cut_points, raises_field, run_fault

DATA = b"abcdef"


def test_slow_consumer_pause_blocks_the_producer() -> None:
    run = run_fault(SlowConsumer(at=Position(offset=3), pause_ms=100), chunks(DATA, 2, 4))
    assert run.out == [
        (0.0, Chunk(b"ab", 0)),
        (0.0, Chunk(b"c", 2)),
        (0.1, Chunk(b"d", 3)),
        (0.1, Chunk(b"ef", 4)),
    ]
    assert run.taken == [0.0, 0.0, 0.1]  # "cd" straddles the position; "ef" waits
    assert run.entries == [("slow_consumer", 3, "pause 100 ms")]


def test_slow_consumer_pulls_at_the_rate() -> None:
    fault = SlowConsumer(at=Position(offset=0), rate_bytes_per_s=100)
    run = run_fault(fault, chunks(bytes(30), 10, 20))
    assert run.times == [0.0, 0.1, 0.2]  # whole reads, not pieces
    assert run.taken == [0.0, 0.1, 0.2]
    assert run.closed_at == 0.3
    assert run.entries == [("slow_consumer", 0, "pause 0 ms, then 100 B/s")]


def test_slow_consumer_pause_then_rate() -> None:
    fault = SlowConsumer(at=Position(offset=10), pause_ms=500, rate_bytes_per_s=100)
    run = run_fault(fault, chunks(bytes(30), 10, 20))
    assert run.times == [0.0, 0.5, 0.6]


def test_slow_consumer_that_never_resumes() -> None:
    fault = SlowConsumer(at=Position(offset=2), pause_ms=None)
    run = run_fault(fault, chunks(DATA, 2, 4), cancel_at=5.0)
    assert run.out == [(0.0, Chunk(b"ab", 0))]
    assert run.taken == [0.0]  # the position is reached after "ab": "cd" is never pulled
    assert run.entries == [("slow_consumer", 2, "pause forever")]


def test_slow_consumer_after_ms() -> None:
    feed = [(0.0, Chunk(b"ab", 0)), (0.2, Chunk(b"cd", 2))]
    run = run_fault(SlowConsumer(at=Position(after_ms=100), pause_ms=300), feed)
    assert run.out == [(0.0, Chunk(b"ab", 0)), (0.4, Chunk(b"cd", 2))]


@settings(max_examples=30, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_slow_consumer_keeps_every_byte(cuts: list[int]) -> None:
    fault = SlowConsumer(at=Position(offset=2), pause_ms=50, rate_bytes_per_s=10)
    run = run_fault(fault, chunks(DATA, *cuts))
    assert run.data == DATA
    assert run.closed_at == 0.45  # the pause, then 4 bytes at 10 B/s


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({}, "pause_ms"),
        ({"pause_ms": 0.0}, "pause_ms"),
        ({"pause_ms": -1.0}, "pause_ms"),
        ({"rate_bytes_per_s": 0}, "rate_bytes_per_s"),
    ],
)
def test_slow_consumer_rejects_bad_config(config: dict[str, float], field: str) -> None:
    with raises_field(field):
        SlowConsumer(at=Position(offset=0), **config)  # type: ignore[arg-type]
