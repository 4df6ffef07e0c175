"""``reorder_frames``: swap two frames on the wire."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Self

from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.drop_frame import Frame
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Close, End, Item, byte_count, split_chunk
from harness.faults.ranged import RangedStage
from harness.faults.stage import Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class ReorderFrames(BaseFault):
    """Swap frames ``frame`` and ``with_frame``: the later one is written where the earlier
    one was, and the earlier one where the later one was; what lies between stays in place.
    The earlier frame and everything up to the later one are held until the later one has
    arrived whole; if the stream ends first, what was held is written in the original order
    (the fault did not happen).

    - ``frame``: one message of the pair, 1-based.
    - ``with_frame``: the other one (before or after ``frame``).
    """

    kind: ClassVar[str] = "reorder_frames"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.REORDERING})
    hunt: ClassVar[Hunt | None] = Hunt(rank=5, weight=5)
    frame: Frame
    with_frame: Frame

    def _validate(self) -> None:
        if self.frame == self.with_frame:
            raise FieldError(f"must differ from frame (both {self.frame})", path=("with_frame",))

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        frame = draw.frame()
        return cls(frame=frame.index, with_frame=draw.other_frame(frame), connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return ReorderStage(self, ctx)


class ReorderStage(RangedStage):
    """Forwards up to the earlier frame, then collects three parts (the earlier frame, what
    lies between, the later frame), each up to its end offset, and writes them swapped once
    the later frame is whole."""

    def __init__(self, fault: ReorderFrames, ctx: StageContext) -> None:
        super().__init__(ctx)
        self.fault = fault
        self.first, self.second = sorted((fault.frame, fault.with_frame))
        self._limits: list[int] = []  # where forwarding, then each part, ends
        self._parts: list[list[Item]] = [[], [], []]
        self._phase = 0  # 0: forwarding, 1-3: collecting part phase-1, 4: done

    def resolve(self) -> tuple[int, int] | None:
        a = self.ctx.locator.frame_span(self.first)
        b = self.ctx.locator.frame_span(self.second)
        if a is None or b is None:
            return None
        self._limits = [a[0], a[1], b[0], b[1]]
        return a[0], b[1]

    def take(self, item: Item, now: float, start: int, end: int) -> list[Item]:
        if self._phase == 4:
            return [item]
        out: list[Item] = []
        if not isinstance(item, Chunk):
            if self._phase == 0:
                return [item]
            if isinstance(item, End):
                return [*self._write(now, swap=False), item]
            self._parts[self._phase - 1].append(item)
            return self._write(now, swap=False) if isinstance(item, Close) else []
        piece: Chunk | None = item
        while piece is not None and self._phase < 4:
            before, piece = split_chunk(piece, self._limits[self._phase])
            if before is not None:
                (out if self._phase == 0 else self._parts[self._phase - 1]).append(before)
            if piece is not None or before is None or before.end >= self._limits[self._phase]:
                self._phase += 1
                if self._phase == 4:
                    out += self._write(now, swap=True)
        if piece is not None:
            out.append(piece)
        return out

    def _write(self, now: float, *, swap: bool) -> list[Item]:
        a, between, b = self._parts
        self._phase, self._parts = 4, [[], [], []]
        b_start, b_end = self._limits[2], self._limits[3]
        if swap and byte_count(b) == b_end - b_start > 0:
            detail = f"frame {self.second} before frame {self.first}"
            self.ctx.recorder.fault(self.fault.kind, self._limits[0], detail, now)
            a, b = b, a
        return [*a, *between, *b]
