"""``reset_peer``: reset the connection on its first bytes, at once or after a while
(Toxiproxy's ``reset_peer``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_DURATION_MS
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.items import Chunk, Close, End, Item
from harness.faults.stage import BaseStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetPeer(BaseFault):
    """When the first bytes (or the end) of this direction arrive after the fault took effect,
    drop them, wait ``timeout_ms`` while reading nothing more, then reset the connection (RST,
    SO_LINGER 0) towards this direction's destination. An idle connection stays open. Unlike
    Toxiproxy, a fault added to an open connection also resets (Toxiproxy sends a FIN there).

    - ``timeout_ms``: time between the first bytes and the reset, in milliseconds.
    """

    kind: ClassVar[str] = "reset_peer"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.TRUNCATION})
    timeout_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)]

    def stage(self, ctx: StageContext) -> Stage:
        return ResetPeerStage(self, ctx)


class ResetPeerStage(BaseStage):
    def __init__(self, fault: ResetPeer, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self.armed_at: float | None = None
        self._offset: int | None = None
        self.fired = False

    def pipe(self, item: Item, now: float) -> list[Item]:
        if self.fired or self.armed_at is not None:
            return []  # dropped: the connection is being reset
        if not isinstance(item, Chunk | End):
            return [item]
        self.armed_at = now
        self._offset = item.offset if isinstance(item, Chunk) else None
        return self.poll(now)

    def poll(self, now: float) -> list[Item]:
        due = self.wake_at
        if due is None or now < due:
            return []
        return self._fire(now, f"rst {self.fault.timeout_ms:g} ms after the first bytes")

    @property
    def wake_at(self) -> float | None:
        if self.fired or self.armed_at is None:
            return None
        return self.armed_at + self.fault.timeout_ms / 1000

    @property
    def accepting(self) -> bool:
        return self.armed_at is None

    def release(self, now: float) -> list[Item]:
        # Taken off while waiting: the first bytes are gone already, so the reset goes now.
        if self.fired or self.armed_at is None:
            return []
        return self._fire(now, "rst (removed while waiting)")

    def retune(self, fault: object) -> bool:
        if not isinstance(fault, ResetPeer):
            return False
        self.fault = fault
        return True

    def _fire(self, now: float, detail: str) -> list[Item]:
        self.fired = True
        self.ctx.recorder.fault(ResetPeer.kind, self._offset, detail, now)
        return [Close("rst")]
