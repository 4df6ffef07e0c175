"""``split``: force a read boundary at one position (the consumer gets two separate reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from harness.faults.config import BaseFault
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Boundary, End, Item
from harness.faults.position import Position
from harness.faults.stage import PositionedStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Split(BaseFault):
    """Force a read boundary: the consumer reads the bytes before ``at`` and the bytes from ``at``
    on in separate reads (the proxy waits until the first part was read before writing the
    rest). Nothing happens when no byte follows ``at``. For a boundary every N bytes use
    ``slice``.

    - ``at``: where to cut: a byte position, or ``after_ms`` to cut between the bytes that
      arrived before that time and the rest.
    """

    kind: ClassVar[str] = "split"
    transparent: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=0, weight=10, upstream=True)
    at: Position

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        at, direction = draw.place(byte_only=False)
        return cls(at=at, direction=direction, connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return SplitStage(self, ctx)


class SplitStage(PositionedStage):
    def __init__(self, fault: Split, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.armed_at: int | None = None

    def fire(self, offset: int, now: float) -> list[Item]:
        # A boundary is only observable before a next byte: it waits for the next item.
        self.armed_at = offset
        return []

    def after(self, item: Item, now: float) -> list[Item]:
        if self.armed_at is None or isinstance(item, End):
            self.armed_at = None
            return [item]
        offset, self.armed_at = self.armed_at, None
        self.ctx.recorder.fault(Split.kind, offset, "read boundary", now)
        return [Boundary(f"split at {offset}"), item]
