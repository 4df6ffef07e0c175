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


def test_an_unpaced_slice_writes_the_same_pieces_without_read_boundaries() -> None:
    run = run_fault(Slice(size_bytes=3, paced=False), chunks(DATA, 5))
    assert run.items == [Chunk(b"abc", 0), Chunk(b"de", 3), Chunk(b"f", 5), Chunk(b"gh", 6)]
    # one record per read, each naming its first cut
    assert run.entries == [("slice", 3, "write boundary"), ("slice", 6, "write boundary")]


def test_an_unpaced_slice_still_waits_its_delay() -> None:
    run = run_fault(Slice(size_bytes=3, delay_ms=10, paced=False), chunks(DATA))
    assert run.out == [
        (0.0, Chunk(b"abc", 0)),
        (0.01, Chunk(b"def", 3)),
        (0.02, Chunk(b"gh", 6)),
    ]


def test_a_big_read_is_cut_in_one_pass() -> None:
    """Before: the rest of a read was copied at every cut (a 4 MiB read in 64-byte slices
    copied 128 GiB); now each byte is copied once, into its piece."""
    data = bytes(range(256)) * 4096  # 1 MiB, one read
    run = run_fault(Slice(size_bytes=64, paced=False), [Chunk(data, 0)])
    pieces = [item for item in run.items if isinstance(item, Chunk)]
    assert (len(pieces), {len(p.data) for p in pieces}) == (16384, {64})
    assert b"".join(p.data for p in pieces) == data
    assert [p.offset for p in pieces[:3]] == [0, 64, 128]
    assert run.entries == [("slice", 64, "16383 write boundaries")]


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


@settings(max_examples=60, deadline=None)
@given(cuts=cut_points(len(DATA)), size=st.integers(1, 9))
def test_unpaced_fixed_pieces_are_the_general_paths(cuts: list[int], size: int) -> None:
    """The fast path for fixed unpaced pieces gives what the general cutter gives (forced
    here with a delay of 0 that the fast path does not take: a random size of one value)."""
    fast = run_fault(Slice(size_bytes=size, paced=False), chunks(DATA, *cuts))
    general = run_fault(Slice(min_bytes=size, max_bytes=size, paced=False), chunks(DATA, *cuts))
    assert fast.items == general.items
    assert fast.entries == general.entries


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
