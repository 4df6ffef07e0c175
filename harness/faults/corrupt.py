"""``corrupt``: change bytes in place at a position (the length of the stream is unchanged)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le, MaxLen, MinLen
from harness.config.limits import MAX_BYTES, MAX_MESSAGE_BYTES
from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Chunk, Close, End, Item, rewrite_chunk
from harness.faults.position import Position, require_bytes
from harness.faults.ranged import RangedStage
from harness.faults.stage import Locator, Stage, StageContext

Byte = Annotated[int, Ge(0), Le(255)]


#: how a hunted corrupt changes bytes: XOR masks (0x01 twice: it keeps a digit a digit, a hex
#: digit almost always a letter, JSON text valid), then values (VT and FF are line breaks to
#: str.splitlines; a quote or a NUL breaks JSON text), then a text written over the bytes
#: (U+2028, a line separator to some splitters, legal inside any message)
HUNTED_CHANGES: tuple[tuple[str, int | str], ...] = (
    ("mask", 0xFF),
    ("mask", 0x01),
    ("mask", 0x01),
    ("mask", 0x20),
    ("value", 0x0B),
    ("value", 0x0C),
    ("value", 0x22),
    ("value", 0x00),
    ("text", "\u2028"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Corrupt(BaseFault):
    """Change ``count_bytes`` bytes from ``at``: XOR each with ``mask``, set each to
    ``value``, or overwrite them with ``text``. Nothing is added or removed, so framing stays
    aligned and only checksums or parsers can notice (an envelope chunk whose ``"sequence":3``
    reads ``"sequence":4`` with its records intact, say).

    - ``at``: the first byte to change (a byte position; not a time).
    - ``count_bytes``: how many bytes to change (default 1; fewer if the stream ends first).
    - ``mask``: XOR mask, 1-255 (default 255: every bit flipped).
    - ``value``: set the bytes to this value, 0-255, instead of XOR (a byte that already has
      it is unchanged).
    - ``text``: overwrite the bytes from ``at`` with this UTF-8 text, byte for byte, instead
      (``count_bytes`` is then its length in bytes).
    """

    kind: ClassVar[str] = "corrupt"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.CORRUPTION})
    hunt: ClassVar[Hunt | None] = Hunt(rank=2, weight=8, upstream=True)
    at: Position
    count_bytes: Annotated[int, Ge(1), Le(MAX_BYTES)] = 1
    mask: Annotated[int, Ge(1), Le(255)] = 0xFF
    value: Byte | None = None
    text: Annotated[str, MinLen(1), MaxLen(MAX_MESSAGE_BYTES)] | None = None

    def _validate(self) -> None:
        try:
            require_bytes(self.at)
        except FieldError as err:
            raise err.within("at") from None
        if self.text is not None and self.value is not None:
            raise FieldError("give value or text, not both", path=("text",))
        if self.text is not None and self.count_bytes not in (1, len(self.text.encode())):
            raise FieldError(
                f"with text, count_bytes is its length ({len(self.text.encode())})",
                path=("count_bytes",),
            )

    @property
    def size(self) -> int:
        """How many bytes it changes."""
        return len(self.text.encode()) if self.text is not None else self.count_bytes

    def byte_changes(self, locator: Locator, wire: bytes) -> dict[int, int]:
        if self.at.is_time:
            return {}  # when it comes is known only as the stream runs
        start = locator.offset(self.at)
        if start is None:
            return {}
        end = min(start + self.size, len(wire))
        return {at: self.new_byte(at, wire[at], start) for at in range(start, end)}

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        at, direction = draw.place(byte_only=True)
        change, how = draw.pick(HUNTED_CHANGES)
        count = draw.between(1, 3)  # drawn for a text too: as many choices either way
        if isinstance(how, str):
            return cls(at=at, text=how, direction=direction, connection=connection)
        mask, value = (how, None) if change == "mask" else (0xFF, how)
        return cls(
            at=at,
            count_bytes=count,
            mask=mask,
            value=value,
            direction=direction,
            connection=connection,
        )

    def new_byte(self, offset: int, old: int, start: int = 0) -> int:
        """What the byte ``old`` at stream ``offset`` becomes (``start``: where ``at`` is)."""
        if self.text is not None:
            return self.text.encode()[offset - start]
        return self.value if self.value is not None else old ^ self.mask

    def how(self) -> str:
        if self.text is not None:
            return f"= {self.text!r}"
        return f"= 0x{self.value:02x}" if self.value is not None else f"^ 0x{self.mask:02x}"

    def stage(self, ctx: StageContext) -> Stage:
        return RewriteStage(ctx, self.kind, self._plan, lambda n: f"{n} bytes {self.how()}")

    def _plan(self, ctx: StageContext) -> Rewrite | None:
        start = ctx.locator.offset(self.at)
        if start is None:
            return None
        return Rewrite(start, start + self.size, lambda p, old: self.new_byte(p, old, start))


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Bytes ``[start, end)`` of the stream, each ``p`` becoming ``byte_at(p, old)``."""

    start: int
    end: int
    byte_at: Callable[[int, int], int]


class RewriteStage(RangedStage):
    """Rewrites the bytes of one range in place; chunks are not cut, so the consumer's reads
    look exactly as without the fault. Recorded once the range has passed (or the stream
    ended inside it)."""

    def __init__(
        self,
        ctx: StageContext,
        kind: str,
        plan: Callable[[StageContext], Rewrite | None],
        detail: Callable[[int], str],
    ) -> None:
        super().__init__(ctx)
        self._kind, self._plan, self._detail = kind, plan, detail
        self._rewrite: Rewrite | None = None
        self._changed = 0
        self._done = False

    def resolve(self) -> tuple[int, int] | None:
        self._rewrite = self._plan(self.ctx)
        return None if self._rewrite is None else (self._rewrite.start, self._rewrite.end)

    def take(self, item: Item, now: float, start: int, end: int) -> list[Item]:
        if self._done:
            return [item]
        if isinstance(item, Chunk):
            assert self._rewrite is not None
            item, count = rewrite_chunk(item, start, end, self._rewrite.byte_at)
            self._changed += count
            if item.end >= end:
                self._finish(start, now)
        elif isinstance(item, Close | End):
            self._finish(start, now)
        return [item]

    def _finish(self, start: int, now: float) -> None:
        self._done = True
        if self._changed:
            self.ctx.recorder.fault(self._kind, start, self._detail(self._changed), now)
