"""``merge``: coalesce bytes from a position into one write (the consumer reads them at once)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_BYTES, MAX_COUNT
from harness.errors import FieldError, PositionError
from harness.faults.config import BaseFault
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Close, End, Item, split_chunk
from harness.faults.position import Position, require_bytes
from harness.faults.stage import Locator, PositionedStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Merge(BaseFault):
    """Coalesce: hold the bytes from ``at`` until ``count_frames`` frames or ``size_bytes``
    bytes have arrived, then write them with one send, so the consumer sees several frames in
    one read. Never holds past the end of the stream: what is held is written at EOF.

    - ``at``: where holding starts (a byte position; not a time).
    - ``count_frames``: hold up to the end of this many frames, counting the frame ``at`` falls
      in (fewer if the stream has fewer).
    - ``size_bytes``: hold this many bytes instead of counting frames.
    """

    kind: ClassVar[str] = "merge"
    transparent: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=6, weight=5)
    at: Position
    count_frames: Annotated[int, Ge(1), Le(MAX_COUNT)] | None = None
    size_bytes: Annotated[int, Ge(1), Le(MAX_BYTES)] | None = None

    def _validate(self) -> None:
        try:
            require_bytes(self.at)
        except FieldError as err:
            raise err.within("at") from None
        if (self.count_frames is None) == (self.size_bytes is None):
            raise FieldError(
                "set exactly one of count_frames and size_bytes", path=("count_frames",)
            )

    def end(self, locator: Locator, start: int) -> int | None:
        """The stream offset where holding stops, for holding that starts at ``start``."""
        if self.size_bytes is not None:
            return start + self.size_bytes
        return frames_end(locator, start, self.count_frames or 1)

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        at = draw.byte_position()
        return cls(at=at, count_frames=draw.between(2, 4), connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return MergeStage(self, ctx)


class MergeStage(PositionedStage):
    def __init__(self, fault: Merge, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.fault = fault
        self._start: int | None = None  # holding since this offset
        self._chunks: list[Chunk] = []
        self._others: list[Item] = []  # boundaries, heartbeats that came while holding

    def fire(self, offset: int, now: float) -> list[Item]:
        self._start = offset
        return self._flush_if_full(now)

    def after(self, item: Item, now: float) -> list[Item]:
        if self._start is None:
            return [item]
        if isinstance(item, Close | End):
            return [*self._flush(now), item]
        if not isinstance(item, Chunk):
            self._others.append(item)
            return []
        end = self.fault.end(self.ctx.locator, self._start)
        if end is None:  # a live stream has not shown where the frames end yet
            self._chunks.append(item)
            return []
        held, rest = split_chunk(item, end)
        if held is not None:
            self._chunks.append(held)
        if rest is None and (held is None or held.end < end):
            return []
        return [*self._flush(now), *([rest] if rest is not None else [])]

    def release(self, now: float) -> list[Item]:
        return [*super().release(now), *self._flush(now)]

    def _flush_if_full(self, now: float) -> list[Item]:
        """Holding from ``start`` to an end at ``start`` holds nothing."""
        assert self._start is not None
        end = self.fault.end(self.ctx.locator, self._start)
        return self._flush(now) if end is not None and end <= self._start else []

    def _flush(self, now: float) -> list[Item]:
        chunks, others = self._chunks, self._others
        self._chunks, self._others, self._start = [], [], None
        if not chunks:
            return others
        data = b"".join(chunk.data for chunk in chunks)
        offset = chunks[0].offset
        self.ctx.recorder.fault(Merge.kind, offset, f"{len(data)} bytes, 1 write", now)
        return [Chunk(data, offset), *others]


def frames_end(locator: Locator, start: int, count: int) -> int | None:
    """End of the ``count``-th frame that ends after ``start`` (frames counted from the one
    ``start`` falls in); the last frame's end if there are fewer; ``start`` if there are none;
    None while a live stream has not shown enough frames."""
    end, found, index = start, 0, 1
    while found < count:
        try:
            span = locator.frame_span(index)
        except PositionError:
            break
        if span is None:
            return None
        if span[1] > start:
            end, found = span[1], found + 1
        index += 1
    return end
