"""Toxic types: Toxiproxy's seven (and ``noop``), tearline's stream-aware faults, and how each
becomes a tearline fault. Pure.

A Toxiproxy type has integer attributes in a fixed order (the order Toxiproxy's JSON shows
them) and a Go struct name its error texts quote. ``fault_for`` checks their ranges (Toxiproxy
checks none: a negative rate crashes it) and builds the tearline fault that does the same:

| toxic | attributes | tearline fault |
| --- | --- | --- |
| ``latency`` | ``latency``, ``jitter`` (ms) | ``latency`` (``delay_ms``, ``jitter_ms``) |
| ``bandwidth`` | ``rate`` (KB/s) | ``throttle`` (``rate * 1000`` B/s); 0: ``stall`` |
| ``slow_close`` | ``delay`` (ms) | ``slow_close`` |
| ``timeout`` | ``timeout`` (ms) | ``timeout`` |
| ``reset_peer`` | ``timeout`` (ms) | ``reset_peer`` |
| ``slicer`` | ``average_size``, ``size_variation`` (bytes), ``delay`` (us) | ``slicer`` |
| ``limit_data`` | ``bytes`` | ``limit_data`` |
| ``noop`` | | none |

Every other tearline fault kind is a toxic type too (``split``, ``kill``, ``drop_frame``, ...),
with the fields of a scenario file's fault as its attributes, validated by the scenario loader
itself, so that a faults file and an API call describe a fault the same way and get the same
messages (``attributes.at.frame: must be >= 1 (got 0)``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.config.limits import MAX_BYTES, MAX_DURATION_MS, MAX_RATE_BYTES_PER_S
from harness.control.gojson import INT, INT64, Num, Obj, Struct, Value
from harness.errors import FieldError
from harness.faults import FAULTS, BaseFault
from harness.faults.config import Fault
from harness.faults.items import Direction
from harness.faults.latency import Latency
from harness.faults.limit_data import LimitData
from harness.faults.position import Position
from harness.faults.registry import rules_for
from harness.faults.reset_peer import ResetPeer
from harness.faults.slicer import Slicer
from harness.faults.slow_close import SlowClose
from harness.faults.stall import Stall
from harness.faults.throttle import Throttle
from harness.faults.timeout import Timeout

Attributes = dict[str, int]
Builder = Callable[[Attributes, Direction], Fault | None]

MAX_MS = int(MAX_DURATION_MS)


@dataclass(frozen=True, slots=True)
class ToxiproxyType:
    """One of Toxiproxy's toxic types: its attributes (name, Go type, largest value) in order."""

    name: str
    struct: str
    attributes: tuple[tuple[str, str, int], ...]
    build: Builder

    @property
    def go_struct(self) -> Struct:
        return Struct(self.struct, tuple((name, gotype) for name, gotype, _ in self.attributes))


def _latency(a: Attributes, d: Direction) -> Fault:
    if a["jitter"] > a["latency"]:
        message = f"must be <= latency ({a['latency']}) (got {a['jitter']})"
        raise FieldError(message, path=("jitter",))
    return Latency(delay_ms=a["latency"], jitter_ms=a["jitter"], direction=d, connection=0)


def _bandwidth(a: Attributes, d: Direction) -> Fault:
    if a["rate"] == 0:  # Toxiproxy passes nothing at rate 0 (Testcontainers cuts links so)
        return Stall(at=Position(offset=0), duration_ms=None, direction=d, connection=0)
    return Throttle(rate_bytes_per_s=a["rate"] * 1000, direction=d, connection=0)


def _slicer(a: Attributes, d: Direction) -> Fault:
    return Slicer(
        average_bytes=a["average_size"],
        variation_bytes=a["size_variation"],
        delay_ms=a["delay"] / 1000,
        direction=d,
        connection=0,
    )


TOXIPROXY_TYPES: dict[str, ToxiproxyType] = {
    t.name: t
    for t in (
        ToxiproxyType(
            "latency",
            "toxics.LatencyToxic",
            (("latency", INT64, MAX_MS), ("jitter", INT64, MAX_MS)),
            _latency,
        ),
        ToxiproxyType(
            "bandwidth",
            "toxics.BandwidthToxic",
            (("rate", INT64, MAX_RATE_BYTES_PER_S // 1000),),
            _bandwidth,
        ),
        ToxiproxyType(
            "slow_close",
            "toxics.SlowCloseToxic",
            (("delay", INT64, MAX_MS),),
            lambda a, d: SlowClose(delay_ms=a["delay"], direction=d, connection=0),
        ),
        ToxiproxyType(
            "timeout",
            "toxics.TimeoutToxic",
            (("timeout", INT64, MAX_MS),),
            lambda a, d: Timeout(timeout_ms=a["timeout"], direction=d, connection=0),
        ),
        ToxiproxyType(
            "reset_peer",
            "toxics.ResetToxic",
            (("timeout", INT64, MAX_MS),),
            lambda a, d: ResetPeer(timeout_ms=a["timeout"], direction=d, connection=0),
        ),
        ToxiproxyType(
            "slicer",
            "toxics.SlicerToxic",
            (
                ("average_size", INT, MAX_BYTES),
                ("size_variation", INT, MAX_BYTES),
                ("delay", INT, MAX_MS * 1000),
            ),
            _slicer,
        ),
        ToxiproxyType(
            "limit_data",
            "toxics.LimitDataToxic",
            (("bytes", INT64, MAX_BYTES),),
            lambda a, d: LimitData(limit_bytes=a["bytes"], direction=d, connection=0),
        ),
        ToxiproxyType("noop", "toxics.NoopToxic", (), lambda a, d: None),
    )
}

#: tearline's own fault kinds offered as toxic types (``latency`` is Toxiproxy's; a fault after
#: which the consumer is to reconnect is the consumer's business, not the proxy's)
TEARLINE_TYPES: tuple[str, ...] = tuple(
    kind for kind, cls in FAULTS.items() if kind not in TOXIPROXY_TYPES and not cls.reconnects
)


def is_type(name: str) -> bool:
    return name in TOXIPROXY_TYPES or name in TEARLINE_TYPES


def default_attributes(toxic_type: str) -> dict[str, Any]:
    """A new toxic's attributes before its body is read: Toxiproxy's zeros, or nothing."""
    found = TOXIPROXY_TYPES.get(toxic_type)
    return {name: 0 for name, _, _ in found.attributes} if found else {}


def check_ranges(toxic_type: ToxiproxyType, attributes: Attributes) -> None:
    """``FieldError`` naming the first attribute outside ``[0, its largest value]``."""
    for name, _, largest in toxic_type.attributes:
        value = attributes[name]
        if value < 0:
            raise FieldError(f"must be >= 0 (got {value})", path=(name,))
        if value > largest:
            raise FieldError(f"must be <= {largest} (got {value})", path=(name,))


def toxiproxy_fault(
    toxic_type: ToxiproxyType, attributes: Attributes, direction: Direction
) -> Fault | None:
    """The tearline fault of a Toxiproxy toxic (None for ``noop``); ``FieldError`` with the
    attribute's name as its path."""
    check_ranges(toxic_type, attributes)
    return toxic_type.build(attributes, direction)


# -- tearline's kinds, validated by the scenario loader --------------------------------------
def plain_value(value: Value) -> Any:
    """A parsed JSON value as plain data for ``json.dumps`` (numbers as their literal)."""
    if isinstance(value, Num):
        return json.loads(value.text)
    if isinstance(value, Obj):
        return {key: plain_value(item) for key, item in value.items}
    if isinstance(value, list):
        return [plain_value(item) for item in value]
    return value


def tearline_fault(
    kind: str, attributes: Obj | None, direction: Direction
) -> tuple[Fault, dict[str, Any]]:
    """The tearline fault ``kind`` with ``attributes`` as its fields, checked exactly as in a
    scenario file; and the attributes as given. ``FieldError`` with the key path inside
    ``attributes`` and the loader's message."""
    # Imported here: the YAML machinery is only needed by toxics that use it.
    from harness.config.issues import Issues  # noqa: PLC0415
    from harness.config.nodes import parse  # noqa: PLC0415
    from harness.config.validate import INVALID, Validator  # noqa: PLC0415

    given: dict[str, Any] = {} if attributes is None else plain_value(attributes)
    for reserved in ("kind", "direction"):
        if reserved in given:
            raise FieldError("set by the toxic's type and stream, not here", path=(reserved,))
    document = {"kind": kind, "direction": direction, "connection": 0, **given}
    issues = Issues("<api>")
    node = parse(json.dumps(document), issues)
    value: Any = INVALID
    if node is not None:
        validator = Validator(issues, rules_for(FAULTS))
        value = validator.value(node, Fault, (), 1)
    if issues.items or value is INVALID:
        first = issues.items[0] if issues.items else None
        message = first.message if first else "invalid"
        raise FieldError(message, path=(first.key_path,) if first and first.key_path else ())
    assert isinstance(value, BaseFault)
    return value, given
