"""latency: every item delayed from its arrival, order kept, jitter from the seed."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings

from harness.faults.items import Chunk, Heartbeat
from harness.faults.latency import Latency
from tests.faults.conftest import chunks, cut_points, raises_field, run_fault


def test_latency_counts_from_each_arrival() -> None:
    feed = [(0.0, Chunk(b"ab", 0)), (0.01, Chunk(b"cd", 2)), (0.02, Chunk(b"ef", 4))]
    run = run_fault(Latency(delay_ms=50), feed)
    assert run.out == [
        (0.05, Chunk(b"ab", 0)),
        (0.06, Chunk(b"cd", 2)),
        (0.07, Chunk(b"ef", 4)),
    ]
    assert run.taken == [0.0, 0.01, 0.02]  # it keeps reading while chunks wait
    assert run.entries == [
        ("latency", 0, "delayed 50.0 ms"),
        ("latency", 2, "delayed 50.0 ms"),
        ("latency", 4, "delayed 50.0 ms"),
    ]
    assert run.closed_at == 0.07


def test_latency_delays_heartbeats_too() -> None:
    run = run_fault(Latency(delay_ms=20), [Heartbeat(b"p"), Chunk(b"a", 0)])
    assert run.out == [(0.02, Heartbeat(b"p")), (0.02, Chunk(b"a", 0))]
    assert run.entries == [("latency", 0, "delayed 20.0 ms")]


def test_latency_jitter_never_reorders() -> None:
    # Seed 15 draws 87.2 ms then 10.9 ms: the second chunk waits for the first.
    fault = Latency(delay_ms=50, jitter_ms=40)
    draws = [fault.draw_s(rng := random.Random(15)), fault.draw_s(rng)]
    assert draws == pytest.approx([0.0872194, 0.0109324], abs=1e-7)
    run = run_fault(fault, [(0.0, Chunk(b"ab", 0)), (0.001, Chunk(b"cd", 2))], seed=15)
    assert run.out == [(round(draws[0], 9), Chunk(b"ab", 0)), (round(draws[0], 9), Chunk(b"cd", 2))]
    assert run.entries == [("latency", 0, "delayed 87.2 ms"), ("latency", 2, "delayed 86.2 ms")]


def test_latency_draws_stay_within_the_jitter() -> None:
    fault, rng = Latency(delay_ms=50, jitter_ms=10), random.Random(3)
    draws = [fault.draw_s(rng) for _ in range(200)]
    assert 0.04 <= min(draws) < 0.041
    assert 0.059 < max(draws) <= 0.06
    assert Latency(delay_ms=5).draw_s(rng) == 0.005


@settings(max_examples=30, deadline=None)
@given(cuts=cut_points(12))
def test_latency_keeps_every_byte_in_order(cuts: list[int]) -> None:
    data = bytes(range(12))
    run = run_fault(Latency(delay_ms=30, jitter_ms=30), chunks(data, *cuts), seed=1)
    assert run.items == chunks(data, *cuts)
    assert run.times == sorted(run.times)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"delay_ms": -1.0}, "delay_ms"),
        ({"delay_ms": float("inf")}, "delay_ms"),
        ({"delay_ms": 10.0, "jitter_ms": -1.0}, "jitter_ms"),
        ({"delay_ms": 10.0, "jitter_ms": 11.0}, "jitter_ms"),
    ],
)
def test_latency_rejects_bad_config(config: dict[str, float], field: str) -> None:
    with raises_field(field):
        Latency(**config)  # type: ignore[arg-type]
