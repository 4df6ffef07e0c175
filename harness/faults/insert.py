"""``insert``: add bytes to the stream at a position (junk after a terminal event, a stray CR)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from harness.config.constraints import MaxLen, MinLen
from harness.config.limits import MAX_MESSAGE_BYTES
from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.items import Heartbeat, Item
from harness.faults.position import Position
from harness.faults.stage import PositionedStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Insert(BaseFault):
    """Write extra bytes at ``at``, between the producer's bytes before and after it, as a
    buggy intermediary or a producer that writes after its end would: junk after a terminal
    event, a stray CR inside a line, a second terminator. The producer's own bytes are all
    delivered, in order; the inserted ones are not the producer's (they have no offset in its
    stream, so later positions still mean what the producer sent).

    - ``at``: where to insert: a byte position (0 = before the first byte; the end of the
      stream = after the last one), or ``after_ms``.
    - ``text``: what to insert, as UTF-8 text (YAML escapes such as ``"\\r"`` work).
    - ``hex``: what to insert, as hexadecimal bytes (``"ff fe"``), instead of ``text``.
    """

    kind: ClassVar[str] = "insert"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.ADDITION})
    at: Position
    text: Annotated[str, MinLen(1), MaxLen(MAX_MESSAGE_BYTES)] | None = None
    hex: Annotated[str, MinLen(1), MaxLen(3 * MAX_MESSAGE_BYTES)] | None = None

    def _validate(self) -> None:
        if (self.text is None) == (self.hex is None):
            raise FieldError("give exactly one of text and hex", path=("text",))
        if self.hex is not None:
            try:
                bytes.fromhex(self.hex)
            except ValueError:
                raise FieldError(f"not hexadecimal bytes: {self.hex!r}", path=("hex",)) from None

    @property
    def data(self) -> bytes:
        return self.text.encode() if self.text is not None else bytes.fromhex(self.hex or "")

    def stage(self, ctx: StageContext) -> Stage:
        return InsertStage(self, ctx)


class InsertStage(PositionedStage):
    def __init__(self, fault: Insert, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.fault = fault

    def fire(self, offset: int, now: float) -> list[Item]:
        data = self.fault.data
        self.ctx.recorder.fault(self.fault.kind, offset, f"{len(data)} bytes inserted", now)
        # Not a Chunk: the bytes are not the producer's and have no offset in its stream.
        return [Heartbeat(data, "inserted")]
