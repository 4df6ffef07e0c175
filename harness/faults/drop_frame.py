"""``drop_frame``: remove every byte of one frame from the stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import BaseFault, Chunk, ItemRx, ItemTx, LinkContext, check_range
from harness.faults.reader import ItemReader, forward_all, forward_until


@dataclass(frozen=True, slots=True, kw_only=True)
class DropFrame(BaseFault):
    """Drop the bytes of frame ``frame`` (as the framing put them on the wire: prefix,
    delimiter and all), as a lossy relay or a buggy resume would. Later frames are unchanged.

    - ``frame``: which message to drop, 1-based.
    """

    kind: ClassVar[str] = "drop_frame"
    frame: int

    def _validate(self) -> None:
        check_range("frame", self.frame, low=1)

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            start, end = ctx.locator.frame_span(self.frame)
            reader = ItemReader(rx)
            if await forward_until(reader, tx, start):
                dropped = 0
                while (item := await reader.next_before(end)) is not None:
                    if isinstance(item, Chunk):
                        dropped += len(item.data)
                    else:
                        await tx.send(item)  # heartbeats and closes are not the frame's
                if dropped:
                    detail = f"frame {self.frame}: {dropped} bytes dropped"
                    ctx.recorder.fault(self.kind, start, detail)
            await forward_all(reader, tx)
