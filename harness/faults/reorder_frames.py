"""``reorder_frames``: swap two frames on the wire."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import BaseFault, Chunk, Item, ItemRx, ItemTx, LinkContext, check_range
from harness.faults.reader import ItemReader, collect_until, forward_all, forward_until


@dataclass(frozen=True, slots=True, kw_only=True)
class ReorderFrames(BaseFault):
    """Swap frames ``frame`` and ``with_frame``: the later one is written where the earlier
    one was, and the earlier one where the later one was; what lies between stays in place.
    The earlier frame and everything up to the later one are held until the later one has
    arrived whole; if the stream ends first, what was held is written in the original order
    (the fault did not happen).

    - ``frame``: one message of the pair, 1-based.
    - ``with_frame``: the other one (before or after ``frame``).
    """

    kind: ClassVar[str] = "reorder_frames"
    frame: int
    with_frame: int

    def _validate(self) -> None:
        check_range("frame", self.frame, low=1)
        check_range("with_frame", self.with_frame, low=1)
        if self.frame == self.with_frame:
            raise ValueError(f"with_frame: must differ from frame (both {self.frame})")

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            first, second = sorted((self.frame, self.with_frame))
            a_start, a_end = ctx.locator.frame_span(first)
            b_start, b_end = ctx.locator.frame_span(second)
            reader = ItemReader(rx)
            if await forward_until(reader, tx, a_start):
                a = await collect_until(reader, a_end)
                between = await collect_until(reader, b_start)
                b = await collect_until(reader, b_end)
                if _size(b) == b_end - b_start > 0:
                    ctx.recorder.fault(self.kind, a_start, f"frame {second} before frame {first}")
                    a, b = b, a
                for item in [*a, *between, *b]:
                    await tx.send(item)
            await forward_all(reader, tx)


def _size(items: list[Item]) -> int:
    return sum(len(item.data) for item in items if isinstance(item, Chunk))
