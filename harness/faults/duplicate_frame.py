"""``duplicate_frame``: write one frame's bytes twice in a row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from harness.faults.config import BaseFault
from harness.faults.drop_frame import Frame
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Item, split_chunk
from harness.faults.ranged import RangedStage
from harness.faults.stage import Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class DuplicateFrame(BaseFault):
    """Forward frame ``frame``, then its bytes again right after it (a retransmission bug, or
    a resume that replays). The copy carries the original's offsets. A frame cut short by the
    end of the stream is not copied.

    - ``frame``: which message to duplicate, 1-based.
    """

    kind: ClassVar[str] = "duplicate_frame"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.DUPLICATION})
    hunt: ClassVar[Hunt | None] = Hunt(rank=4, weight=6)
    frame: Frame

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        return cls(frame=draw.frame().index, connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return DuplicateFrameStage(self, ctx)


class DuplicateFrameStage(RangedStage):
    def __init__(self, fault: DuplicateFrame, ctx: StageContext) -> None:
        super().__init__(ctx)
        self.fault = fault
        self._copy = bytearray()
        self._done = False

    def resolve(self) -> tuple[int, int] | None:
        return self.ctx.locator.frame_span(self.fault.frame)

    def take(self, item: Item, now: float, start: int, end: int) -> list[Item]:
        if self._done or not isinstance(item, Chunk):
            return [item]
        head, rest = split_chunk(item, start)
        middle, tail = split_chunk(rest, end) if rest is not None else (None, None)
        out: list[Item] = [part for part in (head, middle) if part is not None]
        if middle is not None:
            self._copy += middle.data
        if len(self._copy) == end - start and self._copy:
            self._done = True
            detail = f"frame {self.fault.frame}: {len(self._copy)} bytes again"
            self.ctx.recorder.fault(self.fault.kind, end, detail, now)
            out.append(Chunk(bytes(self._copy), start))
        elif tail is not None:
            self._done = True  # the frame did not arrive whole (an earlier fault cut it)
        if tail is not None:
            out.append(tail)
        return out
