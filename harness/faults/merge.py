"""``merge``: coalesce bytes from a position into one write (the consumer reads them at once)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import (
    BaseFault,
    Chunk,
    ItemRx,
    ItemTx,
    LinkContext,
    Locator,
    Position,
    PositionError,
    check_position,
    check_range,
)
from harness.faults.reader import ItemReader, collect_until, forward_all, forward_to


@dataclass(frozen=True, slots=True, kw_only=True)
class Merge(BaseFault):
    """Coalesce: hold the bytes from ``at`` until ``count_frames`` frames or ``size_bytes``
    bytes have arrived, then write them with one send, so the consumer sees several frames in
    one read. Never holds past the end of the stream: what is held is written at EOF.

    - ``at``: where holding starts (a byte position; not a time).
    - ``count_frames``: hold up to the end of this many frames, counting the frame ``at`` falls
      in (fewer if the stream has fewer).
    - ``size_bytes``: hold this many bytes instead of counting frames.
    """

    kind: ClassVar[str] = "merge"
    at: Position
    count_frames: int | None = None
    size_bytes: int | None = None

    def _validate(self) -> None:
        check_position(self.at, time_ok=False)
        if (self.count_frames is None) == (self.size_bytes is None):
            raise ValueError("count_frames: set exactly one of count_frames and size_bytes")
        if self.count_frames is not None:
            check_range("count_frames", self.count_frames, low=1)
        if self.size_bytes is not None:
            check_range("size_bytes", self.size_bytes, low=1)

    def end(self, locator: Locator, start: int) -> int:
        """The stream offset where holding stops, for holding that starts at ``start``."""
        if self.size_bytes is not None:
            return start + self.size_bytes
        return frames_end(locator, start, self.count_frames or 1)

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            start = await forward_to(reader, tx, self.at, ctx)
            if start is not None:
                held = await collect_until(reader, self.end(ctx.locator, start))
                chunks = [item for item in held if isinstance(item, Chunk)]
                if chunks:
                    data = b"".join(chunk.data for chunk in chunks)
                    ctx.recorder.fault(self.kind, chunks[0].offset, f"{len(data)} bytes, 1 write")
                    await tx.send(Chunk(data, chunks[0].offset))
                # Boundaries, heartbeats or a Close that came while holding follow the merge.
                for item in held:
                    if not isinstance(item, Chunk):
                        await tx.send(item)
            await forward_all(reader, tx)


def frames_end(locator: Locator, start: int, count: int) -> int:
    """End of the ``count``-th frame that ends after ``start`` (frames counted from the one
    ``start`` falls in); the last frame's end if there are fewer; ``start`` if there are none.

    Assumes ``locator.frame_span`` raises PositionError past the last frame.
    """
    end, found, index = start, 0, 1
    while found < count:
        try:
            _, frame_end = locator.frame_span(index)
        except PositionError:
            break
        if frame_end > start:
            end, found = frame_end, found + 1
        index += 1
    return end
