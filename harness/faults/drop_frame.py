"""``drop_frame``: remove every byte of one frame from the stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_COUNT
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Close, End, Item, split_chunk
from harness.faults.ranged import RangedStage
from harness.faults.stage import Stage, StageContext

Frame = Annotated[int, Ge(1), Le(MAX_COUNT)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DropFrame(BaseFault):
    """Drop the bytes of frame ``frame`` (as the framing put them on the wire: prefix,
    delimiter and all), as a lossy relay or a buggy resume would. Later frames are unchanged.

    - ``frame``: which message to drop, 1-based.
    """

    kind: ClassVar[str] = "drop_frame"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.LOSS})
    hunt: ClassVar[Hunt | None] = Hunt(rank=3, weight=6)
    frame: Frame

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        return cls(frame=draw.frame().index, connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return DropFrameStage(self, ctx)


class DropFrameStage(RangedStage):
    """Bytes before the frame pass, its bytes are dropped, later bytes pass; heartbeats and
    closes are not the frame's and pass too."""

    def __init__(self, fault: DropFrame, ctx: StageContext) -> None:
        super().__init__(ctx)
        self.fault = fault
        self._dropped = 0
        self._done = False

    def resolve(self) -> tuple[int, int] | None:
        return self.ctx.locator.frame_span(self.fault.frame)

    def take(self, item: Item, now: float, start: int, end: int) -> list[Item]:
        if self._done or not isinstance(item, Chunk):
            if isinstance(item, Close | End):
                self._finish(start, now)
            return [item]
        head, rest = split_chunk(item, start)
        middle, tail = split_chunk(rest, end) if rest is not None else (None, None)
        self._dropped += len(middle.data) if middle is not None else 0
        if tail is not None or (middle is not None and middle.end >= end):
            self._finish(start, now)
        return [part for part in (head, tail) if part is not None]

    def _finish(self, start: int, now: float) -> None:
        if not self._done and self._dropped:
            detail = f"frame {self.fault.frame}: {self._dropped} bytes dropped"
            self.ctx.recorder.fault(self.fault.kind, start, detail, now)
        self._done = True
