"""stall: nothing forwarded for a while (heartbeats optional), then everything held, in order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.faults.items import Chunk, Heartbeat
from harness.faults.position import Position
from harness.faults.stall import Stall
from tests.faults.conftest import chunks, cut_points, raises_field, run_fault

DATA = b"abcdef"
PING = Heartbeat(b": ping\n\n")


def test_stall_holds_the_rest_for_the_duration() -> None:
    run = run_fault(Stall(at=Position(offset=2), duration_ms=100), chunks(DATA, 4))
    assert run.out == [(0.0, Chunk(b"ab", 0)), (0.1, Chunk(b"cd", 2)), (0.1, Chunk(b"ef", 4))]
    assert run.entries == [("stall", 2, "100 ms")]


def test_stall_reads_nothing_while_stalled() -> None:
    # Backpressure: the producer's next chunk is taken only when the stall ends.
    run = run_fault(Stall(at=Position(offset=2), duration_ms=100), chunks(DATA, 4))
    assert run.taken == [0.0, 0.1]


def test_stall_sends_heartbeats_inside_the_stall() -> None:
    fault = Stall(
        at=Position(offset=3),
        duration_ms=350,
        heartbeat="raw",
        heartbeat_text=": ping\n\n",
        heartbeat_interval_ms=100,
    )
    run = run_fault(fault, chunks(DATA))
    assert run.out == [
        (0.0, Chunk(b"abc", 0)),
        (0.1, PING),
        (0.2, PING),
        (0.3, PING),
        (0.35, Chunk(b"def", 3)),
    ]
    assert run.entries == [("stall", 3, "350 ms, heartbeat every 100 ms")]


def test_stall_sends_no_heartbeat_at_its_last_instant() -> None:
    fault = Stall(
        at=Position(offset=3),
        duration_ms=300,
        heartbeat="raw",
        heartbeat_text="p",
        heartbeat_interval_ms=100,
    )
    run = run_fault(fault, chunks(DATA))
    assert run.times == [0.0, 0.1, 0.2, 0.3]
    assert run.data == b"abcppdef"


def test_stall_forever_lasts_until_cancelled() -> None:
    fault = Stall(
        at=Position(offset=3),
        duration_ms=None,
        heartbeat="raw",
        heartbeat_text="p",
        heartbeat_interval_ms=100,
    )
    run = run_fault(fault, chunks(DATA), cancel_at=0.45)
    assert run.out == [(0.0, Chunk(b"abc", 0))] + [
        (t, Heartbeat(b"p")) for t in (0.1, 0.2, 0.3, 0.4)
    ]
    assert run.closed_at == 0.45
    assert run.entries == [("stall", 3, "forever, heartbeat every 100 ms")]


def test_stall_after_ms_starts_at_that_time() -> None:
    feed = [(0.0, Chunk(b"ab", 0)), (0.1, Chunk(b"cd", 2)), (0.2, Chunk(b"ef", 4))]
    run = run_fault(Stall(at=Position(after_ms=100), duration_ms=100), feed, started_at=0.05)
    # Fires at 0.15, after "cd": "ef" (sent at 0.2) is taken and written at 0.25.
    assert run.out == [(0.0, Chunk(b"ab", 0)), (0.1, Chunk(b"cd", 2)), (0.25, Chunk(b"ef", 4))]
    assert run.taken == [0.0, 0.1, 0.25]
    assert run.entries == [("stall", 4, "100 ms")]


def test_stall_at_the_end_delays_the_close() -> None:
    run = run_fault(Stall(at=Position(offset=6), duration_ms=200), chunks(DATA, 3))
    assert run.out == [(0.0, Chunk(b"abc", 0)), (0.0, Chunk(b"def", 3))]
    assert run.closed_at == 0.2
    assert run.entries == [("stall", 6, "200 ms")]


def test_stall_past_the_end_never_fires() -> None:
    run = run_fault(Stall(at=Position(offset=7), duration_ms=200), chunks(DATA, 3))
    assert (run.items, run.closed_at, run.entries) == (chunks(DATA, 3), 0.0, [])


@settings(max_examples=30, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_stall_keeps_every_byte_whatever_the_chunking(cuts: list[int]) -> None:
    run = run_fault(Stall(at=Position(offset=3), duration_ms=100), chunks(DATA, *cuts))
    assert run.data == DATA
    assert [len(i.data) for t, i in run.out if t == 0.0 and isinstance(i, Chunk)] == [
        c.end - c.offset for c in chunks(DATA[:3], *[c for c in cuts if c < 3])
    ]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"duration_ms": -1.0}, "duration_ms"),
        ({"duration_ms": float("inf")}, "duration_ms"),
        ({"duration_ms": 1.0, "heartbeat": "raw", "heartbeat_text": ""}, "heartbeat_text"),
        ({"duration_ms": 1.0, "heartbeat_text": "p"}, "heartbeat_text"),
        ({"duration_ms": 1.0, "heartbeat": "raw"}, "heartbeat"),
        ({"duration_ms": 1.0, "heartbeat_interval_ms": 0.0}, "heartbeat_interval_ms"),
    ],
)
def test_stall_rejects_bad_config(config: dict[str, object], field: str) -> None:
    config.setdefault("at", Position(offset=1))
    with raises_field(field):
        Stall(**config)  # type: ignore[arg-type]
