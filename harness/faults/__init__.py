"""The faults the tearline proxy injects, one module each (like toxiproxy's toxics). Pure.

``FAULTS`` maps each scenario ``kind:`` to its class; ``build_fault(kind, **config)`` makes one,
rejecting unknown and missing fields with a ``FieldError`` that names the field (value checks are
each class's ``__post_init__``). ``field_docs(cls)`` gives the user text of each field.
``TOXIC_FAULTS`` holds the faults made for Toxiproxy's toxics that scenarios do not have yet
(``limit_data``, ``reset_peer``, ``slicer``, ``slow_close``, ``timeout``); the control API
(``harness/control``) offers them, and ``build_fault`` builds them too.

Every fault is a frozen dataclass (``config.py``) with a ``direction``, a ``connection`` and its
own fields, and makes a sans-IO stage for each connection it applies to (``stage.py``; the items
that flow are in ``items.py``, positions in ``position.py``). The proxy drives the stages.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.config.docs import field_docs
from harness.errors import FieldError
from harness.faults.bogus_length import BogusLength
from harness.faults.config import BaseFault, Fault
from harness.faults.corrupt import Corrupt
from harness.faults.drop_frame import DropFrame
from harness.faults.duplicate_frame import DuplicateFrame
from harness.faults.insert import Insert
from harness.faults.kill import Kill
from harness.faults.latency import Latency
from harness.faults.limit_data import LimitData
from harness.faults.merge import Merge
from harness.faults.reconnect import Reconnect
from harness.faults.reorder_frames import ReorderFrames
from harness.faults.reset_peer import ResetPeer
from harness.faults.slice import Slice
from harness.faults.slicer import Slicer
from harness.faults.slow_close import SlowClose
from harness.faults.slow_consumer import SlowConsumer
from harness.faults.split import Split
from harness.faults.stall import Stall
from harness.faults.throttle import Throttle
from harness.faults.timeout import Timeout

__all__ = [
    "FAULTS",
    "TOXIC_FAULTS",
    "BaseFault",
    "BogusLength",
    "Corrupt",
    "DropFrame",
    "DuplicateFrame",
    "Fault",
    "Insert",
    "Kill",
    "Latency",
    "LimitData",
    "Merge",
    "Reconnect",
    "ReorderFrames",
    "ResetPeer",
    "Slice",
    "Slicer",
    "SlowClose",
    "SlowConsumer",
    "Split",
    "Stall",
    "Throttle",
    "Timeout",
    "build_fault",
    "field_docs",
]

_CLASSES: tuple[type[BaseFault], ...] = (
    Split,
    Slice,
    Merge,
    Latency,
    Stall,
    Throttle,
    SlowConsumer,
    Kill,
    Reconnect,
    Corrupt,
    Insert,
    DropFrame,
    DuplicateFrame,
    ReorderFrames,
    BogusLength,
)

#: Scenario ``kind:`` -> fault class.
FAULTS: dict[str, type[BaseFault]] = {cls.kind: cls for cls in _CLASSES}

#: The faults behind Toxiproxy's toxics that are not scenario kinds (yet): ``kind`` -> class.
TOXIC_FAULTS: dict[str, type[BaseFault]] = {
    cls.kind: cls for cls in (LimitData, ResetPeer, Slicer, SlowClose, Timeout)
}


def build_fault(kind: str, /, **config: Any) -> BaseFault:
    """The fault ``kind`` configured with ``config``; ``FieldError`` naming the field at fault."""
    cls = FAULTS.get(kind) or TOXIC_FAULTS.get(kind)
    if cls is None:
        known = ", ".join(FAULTS)
        raise FieldError(f"unknown fault {kind!r}; expected one of {known}", path=("kind",))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in config:
        if name not in fields:
            message = f"not a field of {kind} (fields: {', '.join(fields)})"
            raise FieldError(message, path=(name,))
    for name, f in fields.items():
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and name not in config:
            raise FieldError(f"required by {kind}", path=(name,))
    return cls(**config)
