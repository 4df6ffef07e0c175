"""The faults of a case that no consumer of its protocol could see, as the judge reads them.

Which declared faults are blind on the link is decided before the case runs
(``harness.link.blind``, from the payload's declaration); here, from the wire's timeline, is
whether and where they fired: I1 then holds a connection's accepted messages to what its
consumer's side received, I2 asks for none of the messages a blind loss removed, and the
result carries one note per blind fault that fired. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from harness.evidence.connection import WireConnection
from harness.evidence.timeline import FaultRecord, Timeline
from harness.link.blind import blind_note


class Declared(Protocol):
    """A declared fault as the judge knows it (``judge.DeclaredFault``)."""

    @property
    def kind(self) -> str: ...

    @property
    def connection(self) -> int: ...

    @property
    def direction(self) -> str: ...

    @property
    def blind(self) -> tuple[tuple[str, str], ...]: ...


def blind_records(
    declared: Sequence[Declared], timeline: Timeline
) -> list[tuple[Declared, FaultRecord]]:
    """Each application of a declared fault no consumer of the link can see: the records of
    ``faults[i]`` (``source`` "i"), or of its kind where the record does not say."""
    return [
        (fault, record)
        for index, fault in enumerate(declared)
        if fault.blind
        for record in timeline.faults
        if record.name == fault.kind
        and record.source in ("", str(index))
        and record.direction == fault.direction
        and fault.connection in (0, record.connection)
    ]


def blind_fired(declared: Sequence[Declared], timeline: Timeline, number: int, effect: str) -> bool:
    """Whether a fault whose ``effect`` no consumer of the link can see fired on connection
    ``number``."""
    return any(
        number == record.connection
        for fault, record in blind_records(declared, timeline)
        if any(e == effect for e, _ in fault.blind)
    )


def blind_notes(declared: Sequence[Declared], timeline: Timeline, payload: str) -> tuple[str, ...]:
    """One note per declared fault that fired and that no consumer of the link could see."""
    fired = {id(fault): fault for fault, _ in blind_records(declared, timeline)}
    return tuple(dict.fromkeys(blind_note(f.kind, payload, f.blind) for f in fired.values()))


def removed_unseen(
    declared: Sequence[Declared],
    timeline: Timeline,
    wire: Sequence[WireConnection],
    as_sent: Callable[[str, int], str],
) -> set[str]:
    """Messages a loss no consumer of the link can see took from the consumer's side (as
    sent): no consumer can be asked for them."""
    removed: set[str] = set()
    for conn in wire:
        if blind_fired(declared, timeline, conn.number, "loss"):
            got = {as_sent(d, conn.number) for d in conn.received}
            removed |= {d for d in conn.sent if d not in got}
    return removed
