"""throttle: at most rate_bytes_per_s, in pieces of 100 ms worth."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.faults.items import Chunk, Heartbeat
from harness.faults.throttle import Throttle
from tests.faults.conftest import chunks, cut_points, raises_field, run_fault


def test_throttle_cuts_chunks_into_100_ms_pieces() -> None:
    data = bytes(280)
    run = run_fault(Throttle(rate_bytes_per_s=1000), chunks(data, 250))
    assert run.out == [
        (0.0, Chunk(data[:100], 0)),
        (0.1, Chunk(data[100:200], 100)),
        (0.2, Chunk(data[200:250], 200)),
        (0.25, Chunk(data[250:], 250)),
    ]
    assert run.taken == [0.0, 0.2]  # one chunk held at a time: the producer waits
    assert run.entries == [
        ("throttle", 0, "250 bytes in 3 pieces"),
        ("throttle", 250, "30 bytes in 1 pieces"),
    ]


def test_throttle_gives_no_credit_for_idle_time() -> None:
    feed = [(0.0, Chunk(b"a" * 100, 0)), (1.0, Chunk(b"b" * 100, 100)), (1.0, Chunk(b"c", 200))]
    run = run_fault(Throttle(rate_bytes_per_s=1000), feed)
    assert run.times == [0.0, 1.0, 1.1]


def test_throttle_byte_at_a_time_when_slow() -> None:
    run = run_fault(Throttle(rate_bytes_per_s=5), chunks(b"abc"))
    assert run.out == [(0.0, Chunk(b"a", 0)), (0.2, Chunk(b"b", 1)), (0.4, Chunk(b"c", 2))]
    assert run.closed_at == 0.4


def test_throttle_lets_heartbeats_through() -> None:
    run = run_fault(Throttle(rate_bytes_per_s=10), [Chunk(b"ab", 0), Heartbeat(b"p")])
    assert run.out == [(0.0, Chunk(b"a", 0)), (0.1, Chunk(b"b", 1)), (0.1, Heartbeat(b"p"))]


@settings(max_examples=30, deadline=None)
@given(cuts=cut_points(30))
def test_throttle_keeps_bytes_and_rate_whatever_the_chunking(cuts: list[int]) -> None:
    data = bytes(range(30))
    run = run_fault(Throttle(rate_bytes_per_s=100), chunks(data, *cuts))
    assert run.data == data
    assert all(len(item.data) <= 10 for item in run.items if isinstance(item, Chunk))
    assert run.closed_at >= 0.2  # 30 bytes at 100 B/s: the last 10 leave at 0.2 or later


@pytest.mark.parametrize("rate", [0, -5])
def test_throttle_rejects_bad_rate(rate: int) -> None:
    with raises_field("rate_bytes_per_s"):
        Throttle(rate_bytes_per_s=rate)
