"""``duplicate_frame``: write one frame's bytes twice in a row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import BaseFault, Chunk, ItemRx, ItemTx, LinkContext, check_range
from harness.faults.reader import ItemReader, forward_all, forward_until


@dataclass(frozen=True, slots=True, kw_only=True)
class DuplicateFrame(BaseFault):
    """Forward frame ``frame``, then its bytes again right after it (a retransmission bug, or
    a resume that replays). The copy carries the original's offsets. A frame cut short by the
    end of the stream is not copied.

    - ``frame``: which message to duplicate, 1-based.
    """

    kind: ClassVar[str] = "duplicate_frame"
    frame: int

    def _validate(self) -> None:
        check_range("frame", self.frame, low=1)

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            start, end = ctx.locator.frame_span(self.frame)
            reader = ItemReader(rx)
            if await forward_until(reader, tx, start):
                copy = bytearray()
                while (item := await reader.next_before(end)) is not None:
                    await tx.send(item)
                    if isinstance(item, Chunk):
                        copy += item.data
                if copy and len(copy) == end - start:
                    detail = f"frame {self.frame}: {len(copy)} bytes again"
                    ctx.recorder.fault(self.kind, end, detail)
                    await tx.send(Chunk(bytes(copy), start))
            await forward_all(reader, tx)
