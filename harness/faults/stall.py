"""``stall``: the path freezes at a position for a while (optionally letting heartbeats through)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le, MinLen
from harness.config.limits import MAX_DURATION_MS
from harness.faults.config import BaseFault
from harness.faults.heartbeat import HeartbeatKind, check_heartbeat, heartbeat_bytes
from harness.faults.hunted import WAIT_FACTORS, Draw, Hunt
from harness.faults.items import Heartbeat, Item
from harness.faults.position import Position
from harness.faults.stage import PositionedStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Stall(BaseFault):
    """At ``at``, stop forwarding for ``duration_ms``, then forward everything held, in order.

    While stalled the proxy reads nothing more from the producer (memory stays bounded; once
    the socket buffers fill, the producer's writes block, as on a frozen network path). With
    ``heartbeat``, a heartbeat is written every ``heartbeat_interval_ms`` during the stall, as
    a producer or intermediary does to keep an idle stream open. A stall placed at the very end
    of the stream delays the close. ``slow_consumer`` differs in intent: it models a consumer
    that stops reading (what the producer sees), and can resume at a slow rate.

    - ``at``: where the stall starts: a byte position, or ``after_ms`` (the stall starts then,
      between the bytes already forwarded and the rest).
    - ``duration_ms``: how long nothing is forwarded, in milliseconds; null = until the case
      ends (the stall is then only ended by the case deadline, not by the producer's EOF, since
      the stall reads nothing).
    - ``heartbeat``: what to write during the stall, framed for the link: ``sse-comment`` (one
      SSE comment line ``: ping``, an HTTP chunk of its own on a chunked body; valid between
      events and inside one), ``websocket-ping`` (a ping frame, masked upstream), ``grpc-ping``
      (an HTTP/2 PING frame), ``raw`` (``heartbeat_text`` as it is). Default: none.
    - ``heartbeat_text``: the text of a ``raw`` heartbeat, or of an ``sse-comment`` (default
      ``ping``) or ``websocket-ping`` payload (default empty); UTF-8.
    - ``heartbeat_interval_ms``: time between heartbeats, in milliseconds; the first is sent
      one interval after the stall starts.
    """

    kind: ClassVar[str] = "stall"
    timed: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=9, weight=7, upstream=True)
    at: Position
    duration_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] | None
    heartbeat: HeartbeatKind | None = None
    heartbeat_text: Annotated[str, MinLen(1)] | None = None
    heartbeat_interval_ms: Annotated[float, Ge(1), Le(MAX_DURATION_MS)] = 1000.0

    def _validate(self) -> None:
        check_heartbeat(self.heartbeat, self.heartbeat_text)

    def describe(self) -> str:
        """Human text for the wire timeline."""
        length = "forever" if self.duration_ms is None else f"{self.duration_ms:g} ms"
        if self.heartbeat is None:
            return length
        return f"{length}, heartbeat every {self.heartbeat_interval_ms:g} ms"

    def silences(self) -> bool:
        return self.duration_ms is None

    def silence(self) -> tuple[float, float] | None:
        duration = math.inf if self.duration_ms is None else self.duration_ms
        idle = min(duration, self.heartbeat_interval_ms) if self.heartbeat else duration
        return idle, duration

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        at, direction = draw.place(byte_only=False)
        factor = draw.pick((*WAIT_FACTORS, None))
        # a heartbeat is the producer's side keeping a stream open: downstream only
        wanted = draw.boolean() and direction == "downstream"
        heartbeat = draw.heartbeat if wanted else None
        return cls(
            at=at,
            duration_ms=None if factor is None else factor * draw.timeout_ms,
            heartbeat=heartbeat,
            heartbeat_interval_ms=draw.timeout_ms / 4 if heartbeat else 1000.0,
            direction=direction,
            connection=connection,
        )

    def stage(self, ctx: StageContext) -> Stage:
        return StallStage(self, ctx)


class StallStage(PositionedStage):
    def __init__(self, fault: Stall, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.fault = fault
        self._start = 0.0
        self._until = math.inf
        self._stalled = False
        self._beat = 1  # the next heartbeat's number
        self._held_after: list[Item] = []
        kind = fault.heartbeat
        self._beat_bytes = b"" if kind is None else heartbeat_bytes(kind, fault.heartbeat_text, ctx)

    def fire(self, offset: int, now: float) -> list[Item]:
        self.ctx.recorder.fault(self.fault.kind, offset, self.fault.describe(), now)
        duration = self.fault.duration_ms
        self._start, self._stalled = now, True
        self._until = math.inf if duration is None else now + duration / 1000
        return self._end_if_over(now)

    def after(self, item: Item, now: float) -> list[Item]:
        if self._stalled:
            self._held_after.append(item)
            return []
        return [item]

    def poll(self, now: float) -> list[Item]:
        if not self.fired:
            return super().poll(now)
        out: list[Item] = []
        while (due := self._next_beat()) is not None and due <= now:
            out.append(Heartbeat(self._beat_bytes))
            self._beat += 1
        return out + self._end_if_over(now)

    @property
    def wake_at(self) -> float | None:
        if not self.fired:
            return super().wake_at
        if not self._stalled:
            return None
        times = [t for t in (self._next_beat(), self._until) if t is not None]
        return min((t for t in times if math.isfinite(t)), default=None)

    @property
    def accepting(self) -> bool:
        return not self._stalled

    def release(self, now: float) -> list[Item]:
        held, self._held_after = self._held_after, []
        self._stalled = False
        return [*super().release(now), *held]

    def _end_if_over(self, now: float) -> list[Item]:
        if not self._stalled or now < self._until:
            return []
        self._stalled = False
        held, self._held_after = self._held_after, []
        return held

    def _next_beat(self) -> float | None:
        """When heartbeat number ``_beat`` is due: strictly inside the stall (comparing in
        milliseconds keeps ``duration == k * interval`` deterministic)."""
        if self.fault.heartbeat is None:
            return None
        k, interval = self._beat, self.fault.heartbeat_interval_ms
        if self.fault.duration_ms is not None and k * interval >= self.fault.duration_ms:
            return None
        return self._start + k * interval / 1000
