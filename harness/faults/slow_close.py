"""``slow_close``: hold the end of the stream back for a while (Toxiproxy's ``slow_close``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_DURATION_MS
from harness.faults.config import BaseFault
from harness.faults.items import Close, End, Item
from harness.faults.stage import BaseStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowClose(BaseFault):
    """Bytes pass untouched; when the source ends (its EOF, or its reset), the end is forwarded
    ``delay_ms`` later. The other direction goes on meanwhile.

    - ``delay_ms``: how long the end is held back, in milliseconds.
    """

    kind: ClassVar[str] = "slow_close"
    timed: ClassVar[bool] = True
    delay_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)]

    def stage(self, ctx: StageContext) -> Stage:
        return SlowCloseStage(self, ctx)


class SlowCloseStage(BaseStage):
    def __init__(self, fault: SlowClose, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self._end: Item | None = None
        self._arrived = 0.0

    def pipe(self, item: Item, now: float) -> list[Item]:
        if not isinstance(item, End | Close) or self._end is not None:
            return [item]
        self._end, self._arrived = item, now
        return self.poll(now)

    def poll(self, now: float) -> list[Item]:
        due = self.wake_at
        if due is None or now < due or self._end is None:
            return []
        end, self._end = self._end, None
        self.ctx.recorder.fault(SlowClose.kind, None, f"end held {self.fault.delay_ms:g} ms", now)
        return [end]

    @property
    def wake_at(self) -> float | None:
        return None if self._end is None else self._arrived + self.fault.delay_ms / 1000

    @property
    def accepting(self) -> bool:
        return self._end is None

    def release(self, now: float) -> list[Item]:
        end, self._end = self._end, None
        return [] if end is None else [end]

    def retune(self, fault: object) -> bool:
        if not isinstance(fault, SlowClose):
            return False
        self.fault = fault  # a held end is then due at its arrival plus the new delay
        return True
