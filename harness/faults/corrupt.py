"""``corrupt``: change bytes in place at a position (the length of the stream is unchanged)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import (
    BaseFault,
    ItemRx,
    ItemTx,
    LinkContext,
    Position,
    check_position,
    check_range,
)
from harness.faults.reader import ItemReader, forward_all, rewrite_range


@dataclass(frozen=True, slots=True, kw_only=True)
class Corrupt(BaseFault):
    """Change ``count_bytes`` bytes from ``at``: XOR each with ``mask``, or set each to
    ``value``. Nothing is added or removed, so framing stays aligned and only checksums or
    parsers can notice.

    - ``at``: the first byte to change (a byte position; not a time).
    - ``count_bytes``: how many bytes to change (default 1; fewer if the stream ends first).
    - ``mask``: XOR mask, 1-255 (default 255: every bit flipped).
    - ``value``: set the bytes to this value, 0-255, instead of XOR (a byte that already has
      it is unchanged).
    """

    kind: ClassVar[str] = "corrupt"
    at: Position
    count_bytes: int = 1
    mask: int = 0xFF
    value: int | None = None

    def _validate(self) -> None:
        check_position(self.at, time_ok=False)
        check_range("count_bytes", self.count_bytes, low=1)
        check_range("mask", self.mask, low=1, high=255)
        if self.value is not None:
            check_range("value", self.value, low=0, high=255)

    def new_byte(self, _offset: int, old: int) -> int:
        """What the byte ``old`` becomes."""
        return self.value if self.value is not None else old ^ self.mask

    def _how(self) -> str:
        return f"= 0x{self.value:02x}" if self.value is not None else f"^ 0x{self.mask:02x}"

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            start = ctx.locator.offset(self.at)
            end = start + self.count_bytes
            changed = await rewrite_range(reader, tx, start, end, self.new_byte)
            if changed:
                ctx.recorder.fault(self.kind, start, f"{changed} bytes {self._how()}")
            await forward_all(reader, tx)
