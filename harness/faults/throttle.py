"""``throttle``: limit the stream to a byte rate (toxiproxy's bandwidth toxic)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_RATE_BYTES_PER_S
from harness.faults.config import BaseFault
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Item, split_every
from harness.faults.stage import BaseStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Throttle(BaseFault):
    """Limit the stream to ``rate_bytes_per_s``: each chunk is written in pieces of at most
    100 ms worth of bytes, each piece when the previous one's time at that rate is over, so the
    consumer sees a steady trickle. Idle time earns no credit (no burst after a pause). One
    chunk at a time is held, so the producer feels the limit as backpressure.

    - ``rate_bytes_per_s``: the rate, in bytes per second.
    """

    kind: ClassVar[str] = "throttle"
    transparent: ClassVar[bool] = True
    timed: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=13, weight=2)
    rate_bytes_per_s: Annotated[int, Ge(1), Le(MAX_RATE_BYTES_PER_S)]

    @property
    def piece_bytes(self) -> int:
        """100 ms worth of bytes (at least one)."""
        return max(1, self.rate_bytes_per_s // 10)

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        # 100 ms worth of bytes holds at least one whole frame: no message waits near T
        rate = draw.pick((20, 10)) * max(draw.largest_frame, 100)
        return cls(rate_bytes_per_s=rate, connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return ThrottleStage(self, ctx)


class ThrottleStage(BaseStage):
    """Pieces wait in a queue, each with the time it became ready; a piece goes at that time
    or when the link is free again, whichever is later."""

    def __init__(self, fault: Throttle, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self._queue: deque[tuple[float, Item]] = deque()
        self._free_at = -1.0  # when the link is free for the next piece

    def pipe(self, item: Item, now: float) -> list[Item]:
        if isinstance(item, Chunk) and item.data:
            pieces = split_every(item, self.fault.piece_bytes)
            detail = f"{len(item.data)} bytes in {len(pieces)} pieces"
            self.ctx.recorder.fault(Throttle.kind, item.offset, detail, now)
            self._queue.extend((now, piece) for piece in pieces)
        else:
            self._queue.append((now, item))
        return self.poll(now)

    def poll(self, now: float) -> list[Item]:
        out: list[Item] = []
        while self._queue:
            ready, item = self._queue[0]
            if not isinstance(item, Chunk):
                out.append(self._queue.popleft()[1])
                continue
            start = max(ready, self._free_at)
            if start > now:
                break
            self._queue.popleft()
            out.append(item)
            self._free_at = start + len(item.data) / self.fault.rate_bytes_per_s
            if self._queue:  # the next piece is ready when this one was sent
                self._queue[0] = (start, self._queue[0][1])
        return out

    @property
    def wake_at(self) -> float | None:
        if not self._queue:
            return None
        ready, item = self._queue[0]
        return max(ready, self._free_at) if isinstance(item, Chunk) else ready

    @property
    def accepting(self) -> bool:
        return not self._queue

    def release(self, now: float) -> list[Item]:
        held = [item for _, item in self._queue]
        self._queue.clear()
        return held
