"""The faults the tearline proxy injects, one module each (like toxiproxy's toxics).

``FAULTS`` maps each scenario ``kind:`` to its class; ``build_fault(kind, **config)`` makes one,
rejecting unknown and missing fields with a ValueError that names the field (value checks are
each class's ``__post_init__``). ``field_docs(cls)`` gives the user text of each field.

Every fault is a frozen dataclass with a ``direction``, a ``connection`` and its own fields, and
one ``async def pipe(rx, tx, ctx)`` (see ``base.py`` for the items and ``reader.py`` for the
plumbing).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.faults.base import BaseFault, Fault, field_docs
from harness.faults.bogus_length import BogusLength
from harness.faults.corrupt import Corrupt
from harness.faults.drop_frame import DropFrame
from harness.faults.duplicate_frame import DuplicateFrame
from harness.faults.kill import Kill
from harness.faults.latency import Latency
from harness.faults.merge import Merge
from harness.faults.reconnect import Reconnect
from harness.faults.reorder_frames import ReorderFrames
from harness.faults.slice import Slice
from harness.faults.slow_consumer import SlowConsumer
from harness.faults.split import Split
from harness.faults.stall import Stall
from harness.faults.throttle import Throttle

__all__ = [
    "FAULTS",
    "BaseFault",
    "BogusLength",
    "Corrupt",
    "DropFrame",
    "DuplicateFrame",
    "Fault",
    "Kill",
    "Latency",
    "Merge",
    "Reconnect",
    "ReorderFrames",
    "Slice",
    "SlowConsumer",
    "Split",
    "Stall",
    "Throttle",
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
    DropFrame,
    DuplicateFrame,
    ReorderFrames,
    BogusLength,
)

#: Scenario ``kind:`` -> fault class.
FAULTS: dict[str, type[BaseFault]] = {cls.kind: cls for cls in _CLASSES}


def build_fault(kind: str, /, **config: Any) -> BaseFault:
    """The fault ``kind`` configured with ``config``; ValueError naming the field at fault."""
    cls = FAULTS.get(kind)
    if cls is None:
        raise ValueError(f"kind: unknown fault {kind!r}; expected one of {', '.join(FAULTS)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in config:
        if name not in fields:
            raise ValueError(f"{name}: not a field of {kind} (fields: {', '.join(fields)})")
    for name, f in fields.items():
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and name not in config:
            raise ValueError(f"{name}: required by {kind}")
    return cls(**config)
