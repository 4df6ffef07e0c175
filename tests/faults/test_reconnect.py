"""reconnect: a kill with its own kind (the runner reconnects) and a graceful default."""

from __future__ import annotations

from harness.faults.items import Chunk, Close
from harness.faults.position import Position
from harness.faults.reconnect import Reconnect
from tests.faults.conftest import chunks, raises_field, run_fault


def test_reconnect_cuts_with_fin_by_default() -> None:
    fault = Reconnect(at=Position(offset=3), connection=2)
    run = run_fault(fault, chunks(b"abcdef", 2))
    assert run.items == [Chunk(b"ab", 0), Chunk(b"c", 2), Close("fin")]
    assert run.entries == [("reconnect", 3, "fin")]
    assert (fault.kind, fault.connection) == ("reconnect", 2)


def test_reconnect_after_ms_with_rst() -> None:
    feed = [(0.0, Chunk(b"ab", 0)), (0.5, Chunk(b"cd", 2))]
    run = run_fault(Reconnect(at=Position(after_ms=100), how="rst"), feed)
    assert run.out == [(0.0, Chunk(b"ab", 0)), (0.1, Close("rst"))]


def test_reconnect_rejects_bad_config() -> None:
    with raises_field("how"):
        Reconnect(at=Position(offset=1), how="later")  # type: ignore[arg-type]
    with raises_field("connection"):
        Reconnect(at=Position(offset=1), connection=-2)
