"""The faults behind Toxiproxy's toxics, as stages on the virtual clock (``run_fault``)."""

from __future__ import annotations

import random

import pytest

from harness.control.toxicity import Sometimes
from harness.faults import TOXIC_FAULTS, build_fault
from harness.faults.items import Boundary, Chunk, Close, End
from harness.faults.latency import Latency
from harness.faults.limit_data import LimitData
from harness.faults.reset_peer import ResetPeer
from harness.faults.slicer import Slicer
from harness.faults.slow_close import SlowClose
from harness.faults.stage import BaseStage, StageContext
from harness.faults.timeout import Timeout
from tests.faults.conftest import FakeLocator, FakeRecorder, chunks, raises_field, run_fault

DATA = b"0123456789"


def _ctx(seed: int = 0) -> StageContext:
    return StageContext("downstream", FakeLocator(), FakeRecorder(), random.Random(seed))


# -- limit_data -------------------------------------------------------------------------------
def test_limit_data_cuts_at_the_exact_byte_then_closes() -> None:
    run = run_fault(LimitData(limit_bytes=7), chunks(DATA, 4))
    assert run.items == [Chunk(b"0123", 0), Chunk(b"456", 4), Close("fin")]
    assert run.entries == [("limit_data", 7, "7 bytes, then fin")]


def test_limit_data_closes_without_waiting_for_more_when_a_read_ends_at_the_limit() -> None:
    run = run_fault(LimitData(limit_bytes=4), chunks(DATA, 4))
    assert run.items == [Chunk(b"0123", 0), Close("fin")]


def test_limit_data_zero_closes_on_the_first_bytes_and_an_idle_stream_stays_open() -> None:
    assert run_fault(LimitData(limit_bytes=0), chunks(DATA)).items == [Close("fin")]
    assert run_fault(LimitData(limit_bytes=0), []).items == []  # only the source's end


def test_limit_data_keeps_its_count_when_the_limit_changes() -> None:
    stage = LimitData(limit_bytes=10).stage(_ctx())
    assert stage.pipe(Chunk(b"012345", 0), 0.0) == [Chunk(b"012345", 0)]
    assert isinstance(stage, BaseStage) and stage.retune(LimitData(limit_bytes=8))
    assert stage.pipe(Chunk(b"6789", 6), 0.0) == [Chunk(b"67", 6), Close("fin")]


# -- slow_close -------------------------------------------------------------------------------
def test_slow_close_holds_the_end_only() -> None:
    run = run_fault(SlowClose(delay_ms=600), chunks(DATA, 5))
    assert run.items == [Chunk(b"01234", 0), Chunk(b"56789", 5)]
    assert run.times == [0.0, 0.0]
    assert run.closed_at == 0.6


def test_slow_close_releases_a_held_end_when_removed() -> None:
    stage = SlowClose(delay_ms=600).stage(_ctx())
    assert stage.pipe(End(), 0.0) == []
    assert stage.wake_at == 0.6
    assert stage.release(0.1) == [End()]


# -- timeout ----------------------------------------------------------------------------------
def test_timeout_drops_everything_and_closes_after_its_time() -> None:
    feed = [(0.1, Chunk(b"abc", 0)), (9.0, Chunk(b"def", 3))]  # a source still open at 0.5
    run = run_fault(Timeout(timeout_ms=500), feed, cancel_at=2.0)
    assert run.items == [Close("fin")]
    assert run.closed_at == 0.5


def test_timeout_zero_holds_the_connection_open() -> None:
    run = run_fault(Timeout(timeout_ms=0), [Chunk(b"abc", 0)], cancel_at=3.0)
    assert run.items == []


def test_timeout_removed_closes_only_a_connection_it_dropped_bytes_from() -> None:
    idle = Timeout(timeout_ms=0).stage(_ctx())
    assert idle.poll(0.0) == [] and idle.release(1.0) == []
    dropped = Timeout(timeout_ms=0).stage(_ctx())
    assert dropped.pipe(Chunk(b"abc", 0), 0.0) == []
    assert dropped.release(1.0) == [Close("fin")]


def test_timeout_restarts_its_timer_when_changed() -> None:
    stage = Timeout(timeout_ms=500).stage(_ctx())
    stage.poll(0.0)
    assert stage.wake_at == 0.5
    assert isinstance(stage, BaseStage) and stage.retune(Timeout(timeout_ms=300))
    assert stage.wake_at == 0.0  # the next poll starts the new timer
    stage.poll(0.4)
    assert stage.wake_at == pytest.approx(0.7)


# -- reset_peer -------------------------------------------------------------------------------
def test_reset_peer_resets_on_the_first_bytes_after_its_timeout() -> None:
    run = run_fault(ResetPeer(timeout_ms=300), [(0.2, Chunk(b"hello", 0))], cancel_at=2.0)
    assert run.items == [Close("rst")]
    assert run.closed_at == 0.5
    assert run.taken == [0.2]  # nothing more is read meanwhile


def test_reset_peer_zero_resets_at_once_and_an_idle_stream_is_left_alone() -> None:
    assert run_fault(ResetPeer(timeout_ms=0), chunks(DATA)).items == [Close("rst")]
    idle = ResetPeer(timeout_ms=0).stage(_ctx())
    assert idle.poll(5.0) == [] and idle.wake_at is None


# -- slicer -----------------------------------------------------------------------------------
def test_slicer_halves_like_toxiproxy() -> None:
    # Toxiproxy: 1000 bytes, average 100, no variation -> 16 slices of 62 and 63 bytes
    ends = Slicer(average_bytes=100).cuts(1000, random.Random())
    assert [b - a for a, b in zip([0, *ends], ends, strict=False)] == [62, 63] * 8


def test_slicer_slices_stay_within_average_plus_variation() -> None:
    fault = Slicer(average_bytes=50, variation_bytes=20)
    rng = random.Random(7)
    for length in (1, 70, 71, 1000, 4096):
        ends = fault.cuts(length, rng)
        sizes = [b - a for a, b in zip([0, *ends], ends, strict=False)]
        assert sum(sizes) == length and max(sizes) <= 70 and min(sizes) >= 1


def test_slicer_writes_each_slice_apart_with_its_delay() -> None:
    run = run_fault(Slicer(average_bytes=10, delay_ms=30), [Chunk(bytes(40), 0)])
    assert [len(item.data) for item in run.items if isinstance(item, Chunk)] == [10] * 4
    assert run.times == [0.0, 0.03, 0.06, 0.09]
    assert not any(isinstance(item, Boundary) for item in run.items)


def test_slicer_defaults_cut_single_bytes_instead_of_recursing_forever() -> None:
    assert Slicer(average_bytes=0).cuts(5, random.Random()) == [1, 2, 3, 4, 5]


# -- toxicity ---------------------------------------------------------------------------------
def _hit(toxicity: float, seed: int) -> bool:
    stage = Sometimes(Latency(delay_ms=100), toxicity).stage(_ctx(seed))
    return stage.pipe(Chunk(b"x", 0), 0.0) == []


def test_toxicity_is_drawn_from_the_seed_and_kept_as_it_rises() -> None:
    half = [_hit(0.5, seed) for seed in range(200)]
    assert 70 < sum(half) < 130
    assert half == [_hit(0.5, seed) for seed in range(200)]  # the same seeds, the same draws
    more = [_hit(0.8, seed) for seed in range(200)]
    assert all(m for h, m in zip(half, more, strict=True) if h)  # hit at 0.5: hit at 0.8
    assert all(_hit(1.0, seed) for seed in range(50))
    assert not any(_hit(0.0, seed) for seed in range(50))


def test_toxicity_update_keeps_the_stage_when_the_draw_stays_on_its_side() -> None:
    stage = Sometimes(LimitData(limit_bytes=10), 1.0).stage(_ctx())
    assert isinstance(stage, BaseStage)
    stage.pipe(Chunk(b"012345", 0), 0.0)
    assert stage.retune(Sometimes(LimitData(limit_bytes=8), 1.0))
    assert stage.pipe(Chunk(b"6789", 6), 0.0) == [Chunk(b"67", 6), Close("fin")]
    assert not stage.retune(Sometimes(LimitData(limit_bytes=8), 0.0))  # now it misses: rebuilt


# -- registry ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(TOXIC_FAULTS))
def test_the_toxic_faults_build_by_kind_and_check_their_bounds(kind: str) -> None:
    field = {"limit_data": "limit_bytes", "slicer": "average_bytes"}.get(kind)
    field = field or ("delay_ms" if kind == "slow_close" else "timeout_ms")
    assert build_fault(kind, **{field: 1}).kind == kind
    with raises_field(field):
        build_fault(kind, **{field: -1})
