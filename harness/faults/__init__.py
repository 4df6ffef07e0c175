"""The faults the tearline proxy injects, one module each (like toxiproxy's toxics). Pure.

Each fault is a frozen dataclass (``config.py``) with a ``direction``, a ``connection`` and its
own fields; it makes a sans-IO stage for each connection it applies to (``stage.py``; the items
that flow are in ``items.py``, positions in ``position.py``), and owns what the rest of the
house needs to know of its kind (its ``effects``, whether it is ``timed``, how hunt draws it).
The proxy drives the stages.

A fault is registered once, below (``registry.py``): ``FAULTS`` maps each scenario ``kind:`` to
its class, ``TOXIC_FAULTS`` the faults made for Toxiproxy's toxics that scenarios do not have
(``limit_data``, ``reset_peer``, ``slicer``, ``slow_close``, ``timeout``), which the control API
offers. ``build_fault(kind, **config)`` makes one, rejecting unknown and missing fields with a
``FieldError`` that names the field (value checks are each class's ``__post_init__``).
``field_docs(cls)`` gives the user text of each field.
"""

from __future__ import annotations

from harness.config.docs import field_docs
from harness.faults.bogus_length import BogusLength
from harness.faults.config import BaseFault, Fault
from harness.faults.corrupt import Corrupt
from harness.faults.drop_frame import DropFrame
from harness.faults.duplicate_frame import DuplicateFrame
from harness.faults.inject_event import InjectEvent
from harness.faults.insert import Insert
from harness.faults.kill import Kill
from harness.faults.latency import Latency
from harness.faults.limit_data import LimitData
from harness.faults.merge import Merge
from harness.faults.reconnect import Reconnect
from harness.faults.registry import (
    FAULTS,
    TOXIC_FAULTS,
    build_fault,
    fault_class,
    hunted_kinds,
    register,
    unregister,
)
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
    "InjectEvent",
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
    "fault_class",
    "field_docs",
    "hunted_kinds",
    "register",
    "unregister",
]

# The registrations, in the order scenario kinds are listed to users.
for _scenario_fault in (
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
    InjectEvent,
    DropFrame,
    DuplicateFrame,
    ReorderFrames,
    BogusLength,
):
    register(_scenario_fault)
for _toxic_fault in (LimitData, ResetPeer, Slicer, SlowClose, Timeout):
    register(_toxic_fault, scenario=False)
