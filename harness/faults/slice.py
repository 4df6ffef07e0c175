"""``slice``: cut the whole stream into pieces, each read separately by the consumer."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import trio

from harness.faults.base import BaseFault, Boundary, ItemRx, ItemTx, LinkContext, check_range
from harness.faults.reader import ItemReader, forward_all


@dataclass(frozen=True, slots=True, kw_only=True)
class Slice(BaseFault):
    """Cut the stream into pieces and make the consumer read each piece separately (a read
    boundary between pieces): fixed pieces of ``size_bytes`` (1 = byte at a time), or random
    sizes between ``min_bytes`` and ``max_bytes`` drawn from the case seed. Cuts sit at fixed
    stream offsets, so the pieces do not depend on how the producer's writes were chunked.

    - ``size_bytes``: every piece this many bytes (the last may be shorter).
    - ``min_bytes``: smallest random piece (set with ``max_bytes``, instead of ``size_bytes``).
    - ``max_bytes``: largest random piece.
    - ``delay_ms``: pause between pieces, in milliseconds (default 0).
    """

    kind: ClassVar[str] = "slice"
    size_bytes: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    delay_ms: float = 0.0

    def _validate(self) -> None:
        if (self.size_bytes, self.min_bytes, self.max_bytes) == (None, None, None):
            raise ValueError("size_bytes: required (or min_bytes and max_bytes)")
        if self.size_bytes is not None:
            if (self.min_bytes, self.max_bytes) != (None, None):
                raise ValueError("size_bytes: set size_bytes or min_bytes/max_bytes, not both")
            check_range("size_bytes", self.size_bytes, low=1)
        elif self.min_bytes is None or self.max_bytes is None:
            missing = "min_bytes" if self.min_bytes is None else "max_bytes"
            raise ValueError(f"{missing}: required (or set size_bytes instead)")
        else:
            check_range("min_bytes", self.min_bytes, low=1)
            check_range("max_bytes", self.max_bytes, low=self.min_bytes)
        check_range("delay_ms", self.delay_ms, low=0)

    def cuts(self, rng: random.Random) -> Iterator[int]:
        """The stream offsets where pieces end (pure: sizes drawn in order from ``rng``)."""
        if self.size_bytes is not None:
            return itertools.count(self.size_bytes, self.size_bytes)
        low, high = self.min_bytes or 1, self.max_bytes or 1  # both set: checked above
        return itertools.accumulate(rng.randint(low, high) for _ in itertools.count())

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            for cut in self.cuts(ctx.rng):
                while (item := await reader.next_before(cut)) is not None:
                    await tx.send(item)
                # No boundary after the last byte: it would be a cut nobody can observe.
                if reader.finished or await reader.at_end():
                    break
                ctx.recorder.fault(self.kind, cut, "read boundary")
                await tx.send(Boundary(f"slice at {cut}"))
                if self.delay_ms:
                    await trio.sleep(self.delay_ms / 1000)
            await forward_all(reader, tx)
