"""``bogus_length``: overwrite a frame's length prefix with a wrong length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_COUNT
from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.corrupt import Rewrite, RewriteStage
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.stage import Locator, Stage, StageContext


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
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.REFRAMING})
    hunt: ClassVar[Hunt | None] = Hunt(rank=7, weight=5, needs_length_field=True)
    frame: Annotated[int, Ge(1), Le(MAX_COUNT)]
    length: Annotated[int, Ge(0), Le(2**64 - 1)]

    def byte_changes(self, locator: Locator, wire: bytes) -> dict[int, int]:
        field = locator.length_field(self.frame)
        if field is None:
            return {}
        offset, width = field
        patch = encode_length(self.length, width)
        return {offset + i: patch[i] for i in range(width)}

    def check_placement(self, locator: Locator) -> None:
        """The length must fit the frame's length field (a framing without one raises)."""
        field = locator.length_field(self.frame)
        if field is not None:
            encode_length(self.length, field[1])

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        frame = draw.frame()
        lengths = (frame.size + 1, 0, max(frame.size - 1, 0), 2**31, 2**32 - 1)
        return cls(frame=frame.index, length=draw.pick(lengths), connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        detail = f"frame {self.frame}: {self.length}"
        return RewriteStage(ctx, self.kind, self._plan, lambda _changed: detail)

    def _plan(self, ctx: StageContext) -> Rewrite | None:
        field = ctx.locator.length_field(self.frame)
        if field is None:
            return None
        offset, width = field
        patch = encode_length(self.length, width)
        return Rewrite(offset, offset + width, lambda p, _old: patch[p - offset])


def encode_length(length: int, width: int) -> bytes:
    """``length`` as ``width`` big-endian bytes; FieldError on ``length`` if it does not fit."""
    try:
        return length.to_bytes(width, "big")
    except OverflowError:
        raise FieldError(
            f"{length} does not fit a {width}-byte length prefix", path=("length",)
        ) from None
