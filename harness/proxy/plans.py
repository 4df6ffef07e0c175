"""The faults a proxy applies, by name, which its control API may change while it runs.

A case's faults are fixed: named ``"0"``, ``"1"``, ... in scenario order. The standalone
proxy's control API (Toxiproxy's ``toxics``) adds, updates and removes them while connections
are open; every leg then rebuilds its chain on its next step (``direction.py``): a stage whose
fault is unchanged keeps its state, a removed or replaced stage hands on what it holds. A leg
waiting for bytes is woken by the change (``Waits``), so a fault that acts on an idle
connection (a timeout) takes effect at once, as in Toxiproxy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import trio

from harness.faults.config import Fault
from harness.link.exchanges import SessionExchanges

NamedFault = tuple[str, Fault]


def named(faults: Sequence[Fault]) -> tuple[NamedFault, ...]:
    """A case's faults, named by their index (the name also seeds each fault's generator)."""
    return tuple((str(index), fault) for index, fault in enumerate(faults))


class Wakeable(Protocol):
    """A running leg, told of every change of the plan: ``Waits`` (a leg in trio), or a
    ``threadcopy.ThreadCopy`` (a leg copying in a thread)."""

    def wake(self) -> None: ...


class Waits:
    """How a change of the plan wakes one leg that waits, at the cost of one cancel scope per
    wake rather than one per wait: entering and leaving a trio 0.35 cancel scope costs about
    8 us, a round trip has two waits, and a round trip through the proxy is 60 us.

    The leg runs inside ``scope`` (``renew`` gives a fresh one after a wake) and sets
    ``waiting`` only around waits that a cancel may end without losing anything (a read
    with no bytes in hand, a sleep). The plan cancels the scope only while ``waiting`` is set;
    otherwise the leg sees the new version before its next wait. A cancel that comes while
    a read is already on its way back leaves ``scope.cancel_called`` set with bytes in
    hand: the leg then leaves the scope before its next checkpoint, bytes and all."""

    __slots__ = ("scope", "waiting")

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.waiting = False

    def renew(self) -> trio.CancelScope:
        self.scope = trio.CancelScope()
        self.waiting = False
        return self.scope

    def wake(self) -> None:
        if self.waiting:
            self.scope.cancel()


class FaultPlan:
    def __init__(
        self,
        faults: Sequence[NamedFault] = (),
        *,
        live: bool = False,
        exchanges: SessionExchanges | None = None,
    ) -> None:
        self.faults: tuple[NamedFault, ...] = tuple(faults)
        #: a session's exchanges as they arrive: where faults that name a request apply
        self.exchanges = exchanges
        #: grows with every change; a leg compares it with the one it built its chain for
        self.version = 0
        #: changes can happen while legs run (else legs need not watch for them)
        self.live = live
        #: the legs running under this plan
        self.legs: set[Wakeable] = set()

    def set(self, faults: Sequence[NamedFault]) -> None:
        """Replace every fault; open connections follow on their next step."""
        self.faults = tuple(faults)
        self.version += 1
        for waits in self.legs:
            waits.wake()

    def resolved(self) -> None:
        """A connection's request became whole: the faults that name it may apply now, so
        every leg looks again (as after a change) before its next byte."""
        self.version += 1
        for waits in self.legs:
            waits.wake()

    def for_leg(self, direction: str, connection: int) -> tuple[NamedFault, ...]:
        return tuple(
            (name, fault)
            for name, fault in self.faults
            if fault.direction == direction and self._applies(fault, connection)
        )

    def _applies(self, fault: Fault, connection: int) -> bool:
        if fault.request is None:
            return fault.connection in (0, connection)
        exchanges = self.exchanges
        return exchanges is not None and exchanges.selects(fault.request, connection)
