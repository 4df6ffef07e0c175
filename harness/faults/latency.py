"""``latency``: delay every item by a fixed time plus seeded jitter, keeping their order."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_DURATION_MS
from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, End, Item
from harness.faults.stage import BaseStage, Stage, StageContext

#: Items held inside the fault. A bound keeps memory finite when the producer is much faster
#: than the delay (each read is at most the proxy's read size).
MAX_IN_FLIGHT = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class Latency(BaseFault):
    """Delay every chunk by ``delay_ms`` plus a uniform jitter in ``[-jitter_ms, +jitter_ms]``
    (drawn from the case seed), counted from the moment the chunk reached the proxy, like
    toxiproxy's latency toxic. Order is kept: a chunk never overtakes an earlier one, so a
    short draw after a long one waits for it.

    - ``delay_ms``: added latency, in milliseconds.
    - ``jitter_ms``: spread around ``delay_ms``, in milliseconds (at most ``delay_ms``).
    """

    kind: ClassVar[str] = "latency"
    transparent: ClassVar[bool] = True
    timed: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=12, weight=2)
    delay_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)]
    jitter_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] = 0.0

    def _validate(self) -> None:
        if self.jitter_ms > self.delay_ms:
            raise FieldError(
                f"must be <= delay_ms ({self.delay_ms:g}) (got {self.jitter_ms:g})",
                path=("jitter_ms",),
            )

    def draw_s(self, rng: random.Random) -> float:
        """One item's delay, in seconds."""
        jitter = rng.uniform(-self.jitter_ms, self.jitter_ms) if self.jitter_ms else 0.0
        return (self.delay_ms + jitter) / 1000

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        delay = draw.pick((0.1, 0.2)) * draw.timeout_ms
        jitter = draw.pick((0.0, 0.1)) * draw.timeout_ms
        return cls(delay_ms=delay, jitter_ms=jitter, connection=connection)

    def silence(self) -> tuple[float, float] | None:
        return (self.delay_ms, self.delay_ms) if self.delay_ms else None

    def stage(self, ctx: StageContext) -> Stage:
        return LatencyStage(self, ctx)


class LatencyStage(BaseStage):
    """Holds ``(release time, arrival time, item)`` in arrival order; an item is released at
    its own time or right after the item before it, whichever is later."""

    def __init__(self, fault: Latency, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self._held: deque[tuple[float, float, Item]] = deque()
        self._last_release = 0.0

    def pipe(self, item: Item, now: float) -> list[Item]:
        held = self._held
        if isinstance(item, End):
            # The end comes right after the last held item, not a delay after it.
            due = held[-1][0] if held else now
        else:
            due = max(now + self.fault.draw_s(self.ctx.rng), self._last_release)
        self._last_release = due
        if due <= now and not held:  # nothing to wait for (0 ms): on at once
            self._record(item, now, now)
            return [item]
        held.append((due, now, item))
        return self.poll(now)

    def poll(self, now: float) -> list[Item]:
        out: list[Item] = []
        while self._held and self._held[0][0] <= now:
            _, arrived, item = self._held.popleft()
            self._record(item, arrived, now)
            out.append(item)
        return out

    @property
    def wake_at(self) -> float | None:
        return self._held[0][0] if self._held else None

    @property
    def accepting(self) -> bool:
        return len(self._held) < MAX_IN_FLIGHT

    def release(self, now: float) -> list[Item]:
        held = [item for _, _, item in self._held]
        self._held.clear()
        return held

    def _record(self, item: Item, arrived: float, now: float) -> None:
        if isinstance(item, Chunk):
            waited_ms = (now - arrived) * 1000
            self.ctx.recorder.fault(Latency.kind, item.offset, f"delayed {waited_ms:.1f} ms", now)
