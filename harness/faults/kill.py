"""``kill``: end the destination leg at a position with RST, FIN or a half-close."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import CLOSE_HOWS, Close, CloseHow, Item
from harness.faults.position import Position
from harness.faults.stage import PositionedStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Kill(BaseFault):
    """Forward the bytes before ``at``, then end the consumer's side of the connection; every
    later byte of this direction is dropped (the one fault that loses bytes on purpose).

    A position exactly at the end of the stream still fires: the close then replaces the
    producer's own graceful end (e.g. an RST right after the last byte). After the close the
    fault keeps reading and discarding what the producer still sends, so the producer is not
    blocked; the proxy decides what happens to the producer's leg.

    - ``at``: where to cut: a byte position, or ``after_ms``.
    - ``how``: ``rst`` (reset: SO_LINGER 0, the default), ``fin`` (graceful close) or ``half``
      (FIN in this direction only; the other direction stays open).
    """

    kind: ClassVar[str] = "kill"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.TRUNCATION})
    hunt: ClassVar[Hunt | None] = Hunt(rank=1, weight=12, upstream=True)
    #: how a hunted one closes, the kind's default first; a FIN twice as often as the others:
    #: a clean close is where a consumer takes a cut stream for a whole one
    hunted_hows: ClassVar[tuple[CloseHow, ...]] = ("rst", "fin", "half", "fin")
    at: Position
    how: CloseHow = "rst"

    def _validate(self) -> None:
        if self.how not in CLOSE_HOWS:
            raise FieldError(f"must be 'rst', 'fin' or 'half' (got {self.how!r})", path=("how",))

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        at, direction = draw.place(byte_only=False)
        how = draw.pick(cls.hunted_hows)
        return cls(at=at, how=how, direction=direction, connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return KillStage(self, ctx)


class KillStage(PositionedStage):
    def __init__(self, fault: Kill, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.fault = fault

    def fire(self, offset: int, now: float) -> list[Item]:
        self.ctx.recorder.fault(self.fault.kind, offset, self.fault.how, now)
        return [Close(self.fault.how)]

    def after(self, item: Item, now: float) -> list[Item]:
        return []  # dropped: the leg is closed
