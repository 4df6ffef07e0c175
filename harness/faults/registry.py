"""The fault kinds by name: one registration per fault, and what the validator makes of them.

``FAULTS`` maps each scenario ``kind:`` to its class; ``TOXIC_FAULTS`` holds the faults made for
Toxiproxy's toxics that scenarios do not have (yet). ``register`` adds a class (the package
registers tearline's own; a test may register one of its own, and ``unregister`` it after).
Everything else asks the class what it needs to know (``config.py``), so a registered fault runs
in ``tearline run`` and is drawn by ``tearline hunt`` with no other change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.config.validate import Rules, Tagged
from harness.errors import FieldError
from harness.faults.config import BaseFault, Fault

#: fault kind -> its frozen config dataclass (what scenario files may name)
FaultRegistry = Mapping[str, type[BaseFault]]

#: scenario ``kind:`` -> fault class
FAULTS: dict[str, type[BaseFault]] = {}
#: the faults behind Toxiproxy's toxics that are not scenario kinds: ``kind`` -> class
TOXIC_FAULTS: dict[str, type[BaseFault]] = {}


def register(cls: type[BaseFault], *, scenario: bool = True) -> type[BaseFault]:
    """Make ``cls`` known by its ``kind``: to scenario files (``scenario``) or only to the
    control API's toxics. A kind is registered once."""
    if cls.kind in FAULTS or cls.kind in TOXIC_FAULTS:
        raise ValueError(f"fault kind {cls.kind!r} is registered already")
    (FAULTS if scenario else TOXIC_FAULTS)[cls.kind] = cls
    return cls


def unregister(kind: str) -> None:
    FAULTS.pop(kind, None)
    TOXIC_FAULTS.pop(kind, None)


def fault_class(kind: str) -> type[BaseFault] | None:
    """The class of a fault kind, scenario or toxic (None: no such kind; a timeline's record
    of something that is not a fault, a heartbeat, say)."""
    return FAULTS.get(kind) or TOXIC_FAULTS.get(kind)


def hunted_kinds() -> list[type[BaseFault]]:
    """The kinds ``tearline hunt`` draws, simplest first."""
    drawn = [cls for cls in FAULTS.values() if cls.hunt is not None]
    return sorted(drawn, key=lambda cls: cls.hunt.rank if cls.hunt else 0)


def rules_for(faults: FaultRegistry) -> Rules:
    """The validator rules of scenario files with these fault kinds."""
    return Rules(families={Fault: Tagged("fault", faults)})


def build_fault(kind: str, /, **config: Any) -> BaseFault:
    """The fault ``kind`` configured with ``config``; ``FieldError`` naming the field at fault."""
    cls = fault_class(kind)
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
