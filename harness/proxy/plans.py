"""The faults a proxy applies, by name, which its control API may change while it runs.

A case's faults are fixed: named ``"0"``, ``"1"``, ... in scenario order. The standalone
proxy's control API (Toxiproxy's ``toxics``) adds, updates and removes them while connections
are open; every leg then rebuilds its chain on its next step (``direction.py``): a stage whose
fault is unchanged keeps its state, a removed or replaced stage hands on what it holds. A leg
waiting for bytes is woken by the change (``interruptible``), so a fault that acts on an idle
connection (a timeout) takes effect at once, as in Toxiproxy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import trio

from harness.faults.config import Fault

NamedFault = tuple[str, Fault]


def named(faults: Sequence[Fault]) -> tuple[NamedFault, ...]:
    """A case's faults, named by their index (the name also seeds each fault's generator)."""
    return tuple((str(index), fault) for index, fault in enumerate(faults))


class FaultPlan:
    def __init__(self, faults: Sequence[NamedFault] = (), *, live: bool = False) -> None:
        self.faults: tuple[NamedFault, ...] = tuple(faults)
        #: grows with every change; a leg compares it with the one it built its chain for
        self.version = 0
        #: changes can happen while legs run (else legs need not watch for them)
        self.live = live
        self._waiting: set[trio.CancelScope] = set()

    def set(self, faults: Sequence[NamedFault]) -> None:
        """Replace every fault; open connections follow on their next step."""
        self.faults = tuple(faults)
        self.version += 1
        for scope in self._waiting:
            scope.cancel()

    def for_leg(self, direction: str, connection: int) -> tuple[NamedFault, ...]:
        return tuple(
            (name, fault)
            for name, fault in self.faults
            if fault.direction == direction and fault.connection in (0, connection)
        )

    @contextmanager
    def interruptible(self, deadline: float) -> Iterator[trio.CancelScope]:
        """A cancel scope with ``deadline`` that a change of the plan also cancels."""
        scope = trio.CancelScope(deadline=deadline)
        self._waiting.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._waiting.discard(scope)
