"""slice: pieces of fixed or seeded random size, each read separately."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.faults.items import Boundary, Chunk
from harness.faults.slice import Slice
from tests.faults.conftest import chunks, cut_points, raises_field, run_fault

DATA = b"abcdefgh"


def test_slice_cuts_at_fixed_offsets() -> None:
    run = run_fault(Slice(size_bytes=3), chunks(DATA, 5))
    assert run.items == [
        Chunk(b"abc", 0),
        Boundary("slice at 3"),
        Chunk(b"de", 3),
        Chunk(b"f", 5),
        Boundary("slice at 6"),
        Chunk(b"gh", 6),
    ]
    assert run.entries == [("slice", 3, "read boundary"), ("slice", 6, "read boundary")]


def test_slice_never_ends_with_a_boundary() -> None:
    run = run_fault(Slice(size_bytes=4), chunks(DATA))
    assert run.items == [Chunk(b"abcd", 0), Boundary("slice at 4"), Chunk(b"efgh", 4)]


def test_slice_waits_delay_between_pieces() -> None:
    run = run_fault(Slice(size_bytes=3, delay_ms=10), chunks(DATA))
    assert run.out == [
        (0.0, Chunk(b"abc", 0)),
        (0.0, Boundary("slice at 3")),
        (0.01, Chunk(b"def", 3)),
        (0.01, Boundary("slice at 6")),
        (0.02, Chunk(b"gh", 6)),
    ]
    assert run.closed_at == 0.02


def test_slice_random_sizes_come_from_the_seed() -> None:
    fault = Slice(min_bytes=1, max_bytes=3)
    expected = list(itertools.takewhile(lambda c: c < 20, fault.cuts(random.Random(7))))
    run = run_fault(fault, chunks(bytes(range(20)), 9), seed=7)
    assert run.boundaries == expected
    assert run.data == bytes(range(20))
    assert [len(piece) for piece in _pieces(run.data, expected)] == [
        2,
        1,
        2,
        3,
        1,
        1,
        3,
        1,
        2,
        3,
        1,
    ]


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def test_slice_cuts_are_pure() -> None:
    assert list(itertools.islice(Slice(size_bytes=3).cuts(random.Random(0)), 3)) == [3, 6, 9]
    fault = Slice(min_bytes=2, max_bytes=2)
    assert list(itertools.islice(fault.cuts(random.Random(0)), 3)) == [2, 4, 6]


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)), seed=st.integers(0, 3))
def test_slice_pieces_do_not_depend_on_input_chunking(cuts: list[int], seed: int) -> None:
    fixed = run_fault(Slice(size_bytes=3), chunks(DATA, *cuts))
    assert (fixed.data, fixed.boundaries) == (DATA, [3, 6])
    fault = Slice(min_bytes=1, max_bytes=4)
    expected = list(itertools.takewhile(lambda c: c < len(DATA), fault.cuts(random.Random(seed))))
    randomly = run_fault(fault, chunks(DATA, *cuts), seed=seed)
    assert (randomly.data, randomly.boundaries) == (DATA, expected)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({}, "size_bytes"),
        ({"size_bytes": 0}, "size_bytes"),
        ({"size_bytes": 2, "min_bytes": 1, "max_bytes": 3}, "size_bytes"),
        ({"min_bytes": 2}, "max_bytes"),
        ({"max_bytes": 2}, "min_bytes"),
        ({"min_bytes": 0, "max_bytes": 2}, "min_bytes"),
        ({"min_bytes": 3, "max_bytes": 2}, "max_bytes"),
        ({"size_bytes": 1, "delay_ms": -1.0}, "delay_ms"),
        ({"size_bytes": 1, "delay_ms": float("nan")}, "delay_ms"),
    ],
)
def test_slice_rejects_bad_config(config: dict[str, int | float], field: str) -> None:
    with raises_field(field):
        Slice(**config)  # type: ignore[arg-type]
