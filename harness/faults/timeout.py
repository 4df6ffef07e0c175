"""``timeout``: a path that drops everything and, optionally, closes after a while (Toxiproxy's
``timeout``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, ClassVar

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_DURATION_MS
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.items import Chunk, Close, Item
from harness.faults.stage import BaseStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeout(BaseFault):
    """Drop every byte of this direction; ``timeout_ms`` after the fault took effect (the
    connection's start, or when the fault was added or changed on an open connection) close
    the connection (FIN); 0 never closes it. The source's own end is forwarded. Taken off an
    open connection, the fault closes it only if it dropped bytes there (the stream has a hole);
    a connection it dropped nothing from goes on untouched.

    - ``timeout_ms``: time before the close, in milliseconds; 0 = hold the connection open.
    """

    kind: ClassVar[str] = "timeout"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.TRUNCATION})
    timeout_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)]

    def silence(self) -> tuple[float, float] | None:
        wait = self.timeout_ms or math.inf  # 0: the bytes are dropped for good
        return wait, wait

    def stage(self, ctx: StageContext) -> Stage:
        return TimeoutStage(self, ctx)


class TimeoutStage(BaseStage):
    def __init__(self, fault: Timeout, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self.dropped = 0
        self.closed = False
        self._started: float | None = None  # set by the first poll: when the fault took effect

    def pipe(self, item: Item, now: float) -> list[Item]:
        out = self.poll(now)
        if self.closed:
            return out
        if isinstance(item, Chunk):
            if not self.dropped:
                self.ctx.recorder.fault(Timeout.kind, item.offset, "dropping", now)
            self.dropped += len(item.data)
            return out
        return [*out, item]

    def poll(self, now: float) -> list[Item]:
        if self._started is None:
            self._started = now
        due = self._due
        if self.closed or due is None or now < due:
            return []
        self.closed = True
        detail = f"closed after {self.fault.timeout_ms:g} ms, {self.dropped} bytes dropped"
        self.ctx.recorder.fault(Timeout.kind, None, detail, now)
        return [Close("fin")]

    @property
    def _due(self) -> float | None:
        if self._started is None or not self.fault.timeout_ms:
            return None
        return self._started + self.fault.timeout_ms / 1000

    @property
    def wake_at(self) -> float | None:
        if self.closed:
            return None
        return 0.0 if self._started is None else self._due

    def release(self, now: float) -> list[Item]:
        if self.closed or not self.dropped:
            return []
        self.closed = True
        self.ctx.recorder.fault(Timeout.kind, None, f"removed, {self.dropped} bytes dropped", now)
        return [Close("fin")]

    def retune(self, fault: object) -> bool:
        if not isinstance(fault, Timeout):
            return False
        self.fault, self._started = fault, None  # the timer starts again, with the new value
        return True
