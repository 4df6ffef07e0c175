"""``split``: force a read boundary at one position (the consumer gets two separate reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import (
    BaseFault,
    Boundary,
    ItemRx,
    ItemTx,
    LinkContext,
    Position,
    check_position,
)
from harness.faults.reader import ItemReader, forward_all, forward_to


@dataclass(frozen=True, slots=True, kw_only=True)
class Split(BaseFault):
    """Force a read boundary: the consumer reads the bytes before ``at`` and the bytes from ``at``
    on in separate reads (the proxy waits until the first part was read before writing the
    rest). Nothing happens when no byte follows ``at``. For a boundary every N bytes use
    ``slice``.

    - ``at``: where to cut: a byte position, or ``after_ms`` to cut between the bytes that
      arrived before that time and the rest.
    """

    kind: ClassVar[str] = "split"
    at: Position

    def _validate(self) -> None:
        check_position(self.at, time_ok=True)

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            fired_at = await forward_to(reader, tx, self.at, ctx)
            # A boundary is only observable before a next byte: at EOF it is not a fault.
            if fired_at is not None and not await reader.at_end():
                ctx.recorder.fault(self.kind, fired_at, "read boundary")
                await tx.send(Boundary(f"split at {fired_at}"))
            await forward_all(reader, tx)
