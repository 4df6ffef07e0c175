"""corrupt: bytes changed in place; nothing added or removed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.faults.corrupt import Corrupt
from harness.faults.items import Chunk
from harness.faults.position import Position
from tests.faults.conftest import chunks, cut_points, raises_field, run_fault

DATA = b"abcdefgh"


def test_corrupt_flips_every_bit_by_default() -> None:
    run = run_fault(Corrupt(at=Position(offset=4), count_bytes=2), chunks(DATA, 5))
    assert run.items == [Chunk(b"abcd\x9a", 0), Chunk(b"\x99gh", 5)]  # chunks kept as they were
    assert run.entries == [("corrupt", 4, "2 bytes ^ 0xff")]


def test_corrupt_with_a_mask() -> None:
    run = run_fault(Corrupt(at=Position(offset=0), mask=0x20), chunks(DATA))
    assert run.items == [Chunk(b"Abcdefgh", 0)]


def test_corrupt_sets_a_value() -> None:
    fault = Corrupt(at=Position(frame=2), count_bytes=3, value=0x7E)
    run = run_fault(fault, chunks(DATA, 6), spans=[(0, 5), (5, 8)])
    assert run.data == b"abcde~~~"
    assert run.entries == [("corrupt", 5, "3 bytes = 0x7e")]


def test_corrupt_stops_at_the_end() -> None:
    run = run_fault(Corrupt(at=Position(offset=7), count_bytes=5), chunks(DATA))
    assert run.data == b"abcdefg\x97"
    assert run.entries == [("corrupt", 7, "1 bytes ^ 0xff")]


def test_corrupt_past_the_end_never_fires() -> None:
    run = run_fault(Corrupt(at=Position(offset=8)), chunks(DATA))
    assert (run.data, run.entries) == (DATA, [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_corrupt_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault(Corrupt(at=Position(offset=2), count_bytes=3), chunks(DATA, *cuts))
    assert run.data == b"ab\x9c\x9b\x9afgh"
    assert [(c.offset, len(c.data)) for c in run.items if isinstance(c, Chunk)] == [
        (c.offset, len(c.data)) for c in chunks(DATA, *cuts)
    ]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"count_bytes": 0}, "count_bytes"),
        ({"mask": 0}, "mask"),
        ({"mask": 256}, "mask"),
        ({"value": -1}, "value"),
        ({"value": 256}, "value"),
        ({"at": Position(after_ms=10)}, "at.after_ms"),
    ],
)
def test_corrupt_rejects_bad_config(config: dict[str, object], field: str) -> None:
    config.setdefault("at", Position(offset=0))
    with raises_field(field):
        Corrupt(**config)  # type: ignore[arg-type]


def test_corrupt_text_overwrites_in_place() -> None:
    data = b'{"sequence":3,"records":[]}'
    fault = Corrupt(at=Position(offset=12), text="4")
    run = run_fault(fault, chunks(data, 5, 13))
    assert run.data == b'{"sequence":4,"records":[]}'
    assert [len(c.data) for c in run.items if isinstance(c, Chunk)] == [5, 8, 14]
    assert run.entries == [("corrupt", 12, "1 bytes = '4'")]


def test_corrupt_text_rules() -> None:
    with raises_field("text"):
        Corrupt(at=Position(offset=0), text="ab", value=1)
    with raises_field("count_bytes"):
        Corrupt(at=Position(offset=0), text="ab", count_bytes=3)
