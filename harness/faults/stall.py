"""``stall``: the path freezes at a position for a while (optionally letting heartbeats through)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import trio

from harness.faults.base import (
    BaseFault,
    Heartbeat,
    ItemRx,
    ItemTx,
    LinkContext,
    Position,
    check_position,
    check_range,
)
from harness.faults.reader import ItemReader, forward_all, forward_to


@dataclass(frozen=True, slots=True, kw_only=True)
class Stall(BaseFault):
    """At ``at``, stop forwarding for ``duration_ms``, then forward everything held, in order.

    While stalled the proxy reads nothing more from the producer (memory stays bounded; once
    the socket buffers fill, the producer's writes block, as on a frozen network path). With
    ``heartbeat_text``, a heartbeat is written every ``heartbeat_interval_ms`` during the
    stall, as a producer or intermediary does to keep an idle stream open. A stall placed at
    the very end of the stream delays the close. ``slow_consumer`` differs in intent: it models
    a consumer that stops reading (what the producer sees), and can resume at a slow rate.

    - ``at``: where the stall starts: a byte position, or ``after_ms`` (the stall starts then,
      between the bytes already forwarded and the rest).
    - ``duration_ms``: how long nothing is forwarded, in milliseconds; null = until the case
      ends (the stall is then only ended by the case deadline, not by the producer's EOF, since
      the stall reads nothing).
    - ``heartbeat_text``: text written (UTF-8) during the stall, e.g. ``": ping\\n\\n"`` for SSE;
      it must suit the framing at ``at`` (place SSE pings at an event boundary). Default: none.
    - ``heartbeat_interval_ms``: time between heartbeats, in milliseconds; the first is sent
      one interval after the stall starts.
    """

    kind: ClassVar[str] = "stall"
    at: Position
    duration_ms: float | None
    heartbeat_text: str | None = None
    heartbeat_interval_ms: float = 1000.0

    def _validate(self) -> None:
        check_position(self.at, time_ok=True)
        if self.duration_ms is not None:
            check_range("duration_ms", self.duration_ms, low=0)
        if self.heartbeat_text == "":
            raise ValueError("heartbeat_text: must not be empty (leave it out for no heartbeat)")
        check_range("heartbeat_interval_ms", self.heartbeat_interval_ms, low=1)

    def describe(self) -> str:
        """Human text for the wire timeline."""
        length = "forever" if self.duration_ms is None else f"{self.duration_ms:g} ms"
        if self.heartbeat_text is None:
            return length
        return f"{length}, heartbeat every {self.heartbeat_interval_ms:g} ms"

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            fired_at = await forward_to(reader, tx, self.at, ctx)
            if fired_at is not None:
                ctx.recorder.fault(self.kind, fired_at, self.describe())
                await self._hold(tx)
            await forward_all(reader, tx)

    async def _hold(self, tx: ItemTx) -> None:
        """Wait out the stall, sending heartbeats strictly inside it (none at its last instant:
        comparing in milliseconds keeps ``duration == k * interval`` deterministic)."""
        start = trio.current_time()
        if self.heartbeat_text is not None:
            beat = Heartbeat(self.heartbeat_text.encode())
            interval = self.heartbeat_interval_ms
            k = 1
            while self.duration_ms is None or k * interval < self.duration_ms:
                await trio.sleep_until(start + k * interval / 1000)
                await tx.send(beat)
                k += 1
        if self.duration_ms is None:
            await trio.sleep_forever()
        await trio.sleep_until(start + self.duration_ms / 1000)
