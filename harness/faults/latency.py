"""``latency``: delay every item by a fixed time plus seeded jitter, keeping their order."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

import trio

from harness.faults.base import BaseFault, Chunk, Item, ItemRx, ItemTx, LinkContext, check_range
from harness.faults.reader import ItemReader

#: Items in flight inside the fault. A bound keeps memory finite when the producer is much
#: faster than the delay (reads are at most the relay's read size, 64 KiB, each).
MAX_IN_FLIGHT = 256

#: (arrival time, release time, item)
Stamped = tuple[float, float, Item]


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
    delay_ms: float
    jitter_ms: float = 0.0

    def _validate(self) -> None:
        check_range("delay_ms", self.delay_ms, low=0)
        check_range("jitter_ms", self.jitter_ms, low=0, high=self.delay_ms)

    def draw_s(self, rng: random.Random) -> float:
        """One item's delay, in seconds."""
        jitter = rng.uniform(-self.jitter_ms, self.jitter_ms) if self.jitter_ms else 0.0
        return (self.delay_ms + jitter) / 1000

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        # Two tasks: one stamps arrivals as they come (it must keep reading while the other
        # waits, or each chunk's delay would start when the previous one left), one releases.
        async with rx, tx:
            queue_tx, queue_rx = trio.open_memory_channel[Stamped](MAX_IN_FLIGHT)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._stamp, ItemReader(rx), queue_tx, ctx)
                await self._release(queue_rx, tx, ctx)

    async def _stamp(
        self, reader: ItemReader, queue: trio.MemorySendChannel[Stamped], ctx: LinkContext
    ) -> None:
        async with queue:
            while (item := await reader.next()) is not None:
                now = trio.current_time()
                await queue.send((now, now + self.draw_s(ctx.rng), item))

    async def _release(
        self, queue: trio.MemoryReceiveChannel[Stamped], tx: ItemTx, ctx: LinkContext
    ) -> None:
        async with queue:
            async for arrived, due, item in queue:
                await trio.sleep_until(due)
                if isinstance(item, Chunk):
                    waited_ms = (trio.current_time() - arrived) * 1000
                    ctx.recorder.fault(self.kind, item.offset, f"delayed {waited_ms:.1f} ms")
                await tx.send(item)
