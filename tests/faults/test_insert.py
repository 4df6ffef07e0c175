"""insert: extra bytes at a position; every byte of the producer still delivered, in order."""

from __future__ import annotations

from harness.faults import Insert
from harness.faults.items import Chunk, Close, Heartbeat
from harness.faults.position import Position
from tests.faults.conftest import chunks, raises_field, run_fault

DATA = b"data: a\n\n"


def test_insert_writes_its_bytes_between_the_producer_s() -> None:
    run = run_fault(Insert(at=Position(offset=4), text="\r"), chunks(DATA, 6))
    assert run.items == [
        Chunk(b"data", 0),
        Heartbeat(b"\r", "inserted"),
        Chunk(b": ", 4),
        Chunk(b"a\n\n", 6),
    ]
    assert run.data == b"data\r: a\n\n"
    assert run.entries == [("insert", 4, "1 bytes inserted")]


def test_insert_at_the_end_writes_after_the_last_byte() -> None:
    run = run_fault(Insert(at=Position(offset=len(DATA)), hex="ff fe"), chunks(DATA))
    assert run.data == DATA + b"\xff\xfe"


def test_insert_past_the_end_never_fires() -> None:
    run = run_fault(Insert(at=Position(offset=99), text="x"), [*chunks(DATA), Close("fin")])
    assert (run.data, run.entries) == (DATA, [])


def test_insert_rules() -> None:
    with raises_field("text"):
        Insert(at=Position(offset=0))
    with raises_field("text"):
        Insert(at=Position(offset=0), text="a", hex="61")
    with raises_field("hex"):
        Insert(at=Position(offset=0), hex="zz")
