"""``slow_consumer``: from a position, the consumer stops reading, then reads slowly."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_DURATION_MS, MAX_RATE_BYTES_PER_S
from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Item
from harness.faults.position import Position
from harness.faults.stage import PositionedStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowConsumer(BaseFault):
    """From ``at``, pull nothing from the producer for ``pause_ms``, then (with
    ``rate_bytes_per_s``) pull at that average rate: each read is forwarded whole at once,
    then the next waits its bytes' time. The proxy stops reading, the producer's socket buffer
    fills and its writes block: what the producer holds then is what invariant I6 (bounded
    buffering) judges.

    Unlike ``stall`` (the consumer sees silence, maybe heartbeats) and ``throttle`` (the
    consumer sees a smooth trickle), this fault is about what the producer sees: a receiver
    that stops or drains slowly; the consumer gets whole reads in bursts.

    - ``at``: where the consumer stops reading: a byte position, or ``after_ms``.
    - ``pause_ms``: how long nothing is read, in milliseconds (default 0); null = never again
      (until the case deadline).
    - ``rate_bytes_per_s``: after the pause, read at this average rate, in bytes per second
      (default: full speed).
    """

    kind: ClassVar[str] = "slow_consumer"
    timed: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=11, weight=3)
    at: Position
    pause_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] | None = 0.0
    rate_bytes_per_s: Annotated[int, Ge(1), Le(MAX_RATE_BYTES_PER_S)] | None = None

    def _validate(self) -> None:
        if self.rate_bytes_per_s is None and self.pause_ms == 0:
            raise FieldError(
                "set pause_ms > 0 or rate_bytes_per_s (else no fault)", path=("pause_ms",)
            )

    def describe(self) -> str:
        """Human text for the wire timeline."""
        pause = "forever" if self.pause_ms is None else f"{self.pause_ms:g} ms"
        rate = f", then {self.rate_bytes_per_s} B/s" if self.rate_bytes_per_s else ""
        return f"pause {pause}{rate}"

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        at, direction = draw.place(byte_only=False)
        rate = draw.pick((None, 20 * max(draw.largest_frame, 100)))
        pause = draw.wait_ms()
        return cls(
            at=at,
            pause_ms=pause,
            rate_bytes_per_s=rate,
            direction=direction,
            connection=connection,
        )

    def silence(self) -> tuple[float, float] | None:
        pause = math.inf if self.pause_ms is None else self.pause_ms
        return pause, pause

    def stage(self, ctx: StageContext) -> Stage:
        return SlowConsumerStage(self, ctx)


class SlowConsumerStage(PositionedStage):
    """After firing, items wait in a queue; one goes each time the next pull is due."""

    def __init__(self, fault: SlowConsumer, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.fault = fault
        self._queue: deque[Item] = deque()
        self._next_pull = math.inf
        self._due = False  # the next pull's time has come (set by pipe and poll)

    def fire(self, offset: int, now: float) -> list[Item]:
        self.ctx.recorder.fault(self.fault.kind, offset, self.fault.describe(), now)
        pause = self.fault.pause_ms
        self._next_pull = math.inf if pause is None else now + pause / 1000
        return self._pull(now)

    def after(self, item: Item, now: float) -> list[Item]:
        self._queue.append(item)
        return self._pull(now)

    def poll(self, now: float) -> list[Item]:
        return self._pull(now) if self.fired else super().poll(now)

    @property
    def wake_at(self) -> float | None:
        if not self.fired:
            return super().wake_at
        return None if self._due or math.isinf(self._next_pull) else self._next_pull

    @property
    def accepting(self) -> bool:
        return not self.fired or (self._due and not self._queue)

    def release(self, now: float) -> list[Item]:
        held = [*super().release(now), *self._queue]
        self._queue.clear()
        self._due, self._next_pull = True, now
        return held

    def _pull(self, now: float) -> list[Item]:
        out: list[Item] = []
        self._due = now >= self._next_pull
        while self._due and self._queue:
            item = self._queue.popleft()
            out.append(item)
            rate = self.fault.rate_bytes_per_s
            if rate is not None and isinstance(item, Chunk):
                self._next_pull = now + len(item.data) / rate
                self._due = now >= self._next_pull
        return out
