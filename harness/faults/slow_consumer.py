"""``slow_consumer``: from a position, the consumer stops reading, then reads slowly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import trio

from harness.faults.base import (
    BaseFault,
    Chunk,
    ItemRx,
    ItemTx,
    LinkContext,
    Position,
    check_position,
    check_range,
)
from harness.faults.reader import ItemReader, forward_all, forward_to


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowConsumer(BaseFault):
    """From ``at``, pull nothing from the producer for ``pause_ms``, then (with
    ``rate_bytes_per_s``) pull at that average rate: each read is forwarded whole at once,
    then the next waits its bytes' time. The relay's channel fills, the relay stops reading,
    the producer's socket buffer fills and its writes block: what the producer holds then is
    what invariant I6 (bounded buffering) judges.

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
    at: Position
    pause_ms: float | None = 0.0
    rate_bytes_per_s: int | None = None

    def _validate(self) -> None:
        check_position(self.at, time_ok=True)
        if self.pause_ms is not None:
            check_range("pause_ms", self.pause_ms, low=0)
        if self.rate_bytes_per_s is not None:
            check_range("rate_bytes_per_s", self.rate_bytes_per_s, low=1)
        elif self.pause_ms == 0:
            raise ValueError("pause_ms: set pause_ms > 0 or rate_bytes_per_s (else no fault)")

    def describe(self) -> str:
        """Human text for the wire timeline."""
        pause = "forever" if self.pause_ms is None else f"{self.pause_ms:g} ms"
        rate = f", then {self.rate_bytes_per_s} B/s" if self.rate_bytes_per_s else ""
        return f"pause {pause}{rate}"

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            fired_at = await forward_to(reader, tx, self.at, ctx)
            if fired_at is not None:
                ctx.recorder.fault(self.kind, fired_at, self.describe())
                if self.pause_ms is None:
                    await trio.sleep_forever()
                await trio.sleep(self.pause_ms / 1000)
                if self.rate_bytes_per_s is not None:
                    await self._pull_slowly(reader, tx, self.rate_bytes_per_s)
            await forward_all(reader, tx)

    @staticmethod
    async def _pull_slowly(reader: ItemReader, tx: ItemTx, rate: int) -> None:
        while (item := await reader.next()) is not None:
            await tx.send(item)
            if isinstance(item, Chunk):
                await trio.sleep(len(item.data) / rate)
