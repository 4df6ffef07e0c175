"""``throttle``: limit the stream to a byte rate (toxiproxy's bandwidth toxic)."""

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
    check_range,
    split_every,
)
from harness.faults.reader import ItemReader


@dataclass(frozen=True, slots=True, kw_only=True)
class Throttle(BaseFault):
    """Limit the stream to ``rate_bytes_per_s``: each chunk is written in pieces of at most
    100 ms worth of bytes, each piece when the previous one's time at that rate is over, so the
    consumer sees a steady trickle. Idle time earns no credit (no burst after a pause). One
    chunk at a time is held, so the producer feels the limit as backpressure.

    - ``rate_bytes_per_s``: the rate, in bytes per second.
    """

    kind: ClassVar[str] = "throttle"
    rate_bytes_per_s: int

    def _validate(self) -> None:
        check_range("rate_bytes_per_s", self.rate_bytes_per_s, low=1)

    @property
    def piece_bytes(self) -> int:
        """100 ms worth of bytes (at least one)."""
        return max(1, self.rate_bytes_per_s // 10)

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            free_at = trio.current_time()  # when the link is free for the next piece
            while (item := await reader.next()) is not None:
                if not isinstance(item, Chunk):
                    await tx.send(item)
                    continue
                pieces = split_every(item, self.piece_bytes)
                detail = f"{len(item.data)} bytes in {len(pieces)} pieces"
                ctx.recorder.fault(self.kind, item.offset, detail)
                for piece in pieces:
                    start = max(trio.current_time(), free_at)
                    await trio.sleep_until(start)
                    await tx.send(piece)
                    free_at = start + len(piece.data) / self.rate_bytes_per_s
