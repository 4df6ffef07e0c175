"""``limit_data``: let a number of bytes through, then close the connection (Toxiproxy's
``limit_data``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_BYTES
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.items import Chunk, Close, Item, split_chunk
from harness.faults.stage import BaseStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitData(BaseFault):
    """Forward the first ``limit_bytes`` bytes this direction carries once the fault applies
    (from the connection's start, or from when the fault was added to an open connection), cut
    the read that crosses the limit at the exact byte, then close the connection (FIN). With
    0 the first bytes close it and none pass; an idle connection stays open. Changing the limit
    on an open connection keeps the count of bytes already passed.

    - ``limit_bytes``: how many bytes pass before the close.
    """

    kind: ClassVar[str] = "limit_data"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.TRUNCATION})
    limit_bytes: Annotated[int, Ge(0), Le(MAX_BYTES)]

    def stage(self, ctx: StageContext) -> Stage:
        return LimitDataStage(self, ctx)


class LimitDataStage(BaseStage):
    def __init__(self, fault: LimitData, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self.passed = 0
        self.closed = False

    def pipe(self, item: Item, now: float) -> list[Item]:
        if self.closed:
            return []
        if not isinstance(item, Chunk):
            return [item]
        room = self.fault.limit_bytes - self.passed
        if len(item.data) < room:
            self.passed += len(item.data)
            return [item]
        before, _ = split_chunk(item, item.offset + max(room, 0))
        self.closed = True
        self.passed = self.fault.limit_bytes
        at = item.offset + max(room, 0)
        self.ctx.recorder.fault(LimitData.kind, at, f"{self.passed} bytes, then fin", now)
        return [*([before] if before is not None else []), Close("fin")]

    def retune(self, fault: object) -> bool:
        if not isinstance(fault, LimitData):
            return False
        self.fault = fault  # the count so far stays: a new limit below it closes on the next read
        return True
