"""The registry: every kind builds; unknown and missing fields are named; fields documented."""

from __future__ import annotations

import dataclasses

import pytest

from harness.faults import FAULTS, Fault, build_fault, field_docs
from harness.faults.kill import Kill
from harness.faults.position import Position
from tests.faults.conftest import raises_field

KINDS = [
    "split",
    "slice",
    "merge",
    "latency",
    "stall",
    "throttle",
    "slow_consumer",
    "kill",
    "reconnect",
    "corrupt",
    "insert",
    "inject_event",
    "drop_frame",
    "duplicate_frame",
    "reorder_frames",
    "bogus_length",
]

#: The smallest valid configuration of each kind.
MINIMAL: dict[str, dict[str, object]] = {
    "split": {"at": Position(offset=1)},
    "slice": {"size_bytes": 1},
    "merge": {"at": Position(frame=1), "count_frames": 2},
    "latency": {"delay_ms": 10.0},
    "stall": {"at": Position(offset=1), "duration_ms": 100.0},
    "throttle": {"rate_bytes_per_s": 100},
    "slow_consumer": {"at": Position(offset=1), "pause_ms": 100.0},
    "kill": {"at": Position(offset=1)},
    "reconnect": {"at": Position(offset=1)},
    "corrupt": {"at": Position(offset=1)},
    "insert": {"at": Position(offset=1), "text": "x"},
    "inject_event": {"event": "error", "before_frame": 2},
    "drop_frame": {"frame": 1},
    "duplicate_frame": {"frame": 1},
    "reorder_frames": {"frame": 1, "with_frame": 2},
    "bogus_length": {"frame": 1, "length": 7},
}


def test_registry_has_the_design_kinds() -> None:
    assert list(FAULTS) == KINDS
    assert all(cls.kind == kind for kind, cls in FAULTS.items())


@pytest.mark.parametrize("kind", KINDS)
def test_build_fault_makes_each_kind(kind: str) -> None:
    fault = build_fault(kind, **MINIMAL[kind])
    assert type(fault) is FAULTS[kind]
    assert (fault.direction, fault.connection) == ("downstream", 1)


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_is_documented_for_users(kind: str) -> None:
    cls = FAULTS[kind]
    docs = field_docs(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    assert [name for name in names if not docs.get(name)] == []
    assert (cls.__doc__ or "").strip()


@pytest.mark.parametrize("kind", KINDS)
def test_faults_are_frozen(kind: str) -> None:
    fault = build_fault(kind, **MINIMAL[kind])
    with pytest.raises(dataclasses.FrozenInstanceError):
        fault.connection = 2  # type: ignore[misc]


def test_faults_satisfy_the_fault_protocol() -> None:
    # Checked by mypy: the proxy only knows faults as `Fault`.
    faults: list[Fault] = [build_fault(kind, **MINIMAL[kind]) for kind in KINDS]
    assert [fault.kind for fault in faults] == KINDS


def test_build_fault_rejects_an_unknown_kind() -> None:
    with raises_field("kind"):
        build_fault("lag")


def test_build_fault_names_an_unknown_field() -> None:
    with raises_field("latency_ms"):
        build_fault("latency", latency_ms=5)


def test_build_fault_names_a_missing_field() -> None:
    with raises_field("at"):
        build_fault("kill", how="rst")


def test_build_fault_passes_values_to_validation() -> None:
    with raises_field("delay_ms"):
        build_fault("latency", delay_ms=-1.0)
    assert build_fault("kill", at=Position(offset=3), how="fin") == Kill(
        at=Position(offset=3), how="fin"
    )
