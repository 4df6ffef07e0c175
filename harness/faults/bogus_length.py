"""``bogus_length``: overwrite a frame's length prefix with a wrong length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import BaseFault, ItemRx, ItemTx, LinkContext, check_range
from harness.faults.reader import ItemReader, forward_all, rewrite_range


@dataclass(frozen=True, slots=True, kw_only=True)
class BogusLength(BaseFault):
    """Overwrite the length prefix of frame ``frame`` with ``length`` (big-endian, in the
    prefix's own width), leaving the frame's bytes as they are, so the consumer's framing
    reads too much or too little. Only for framings with a length prefix (length-prefixed,
    gRPC); a framing without one makes the case fail with a position error.

    - ``frame``: which message's prefix, 1-based.
    - ``length``: the length to write; must fit the prefix (a u32 for length-prefixed and gRPC).
    """

    kind: ClassVar[str] = "bogus_length"
    frame: int
    length: int

    def _validate(self) -> None:
        check_range("frame", self.frame, low=1)
        check_range("length", self.length, low=0, high=2**64 - 1)

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            offset, width = ctx.locator.length_field(self.frame)
            patch = encode_length(self.length, width)
            reader = ItemReader(rx)
            changed = await rewrite_range(
                reader, tx, offset, offset + width, lambda p, _old: patch[p - offset]
            )
            if changed:
                ctx.recorder.fault(self.kind, offset, f"frame {self.frame}: {self.length}")
            await forward_all(reader, tx)


def encode_length(length: int, width: int) -> bytes:
    """``length`` as ``width`` big-endian bytes; ValueError naming ``length`` if it does not fit."""
    try:
        return length.to_bytes(width, "big")
    except OverflowError:
        raise ValueError(f"length: {length} does not fit a {width}-byte length prefix") from None
