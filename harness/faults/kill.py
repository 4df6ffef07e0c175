"""``kill``: end the destination leg at a position with RST, FIN or a half-close."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, get_args

from harness.faults.base import (
    BaseFault,
    Close,
    CloseHow,
    ItemRx,
    ItemTx,
    LinkContext,
    Position,
    check_position,
)
from harness.faults.reader import ItemReader, forward_to


@dataclass(frozen=True, slots=True, kw_only=True)
class Kill(BaseFault):
    """Forward the bytes before ``at``, then end the consumer's side of the connection; every
    later byte of this direction is dropped (the one fault that loses bytes on purpose).

    A position exactly at the end of the stream still fires: the close then replaces the
    producer's own graceful end (e.g. an RST right after the last byte). After the close the
    fault keeps reading and discarding what the producer still sends, so the proxy's relay is
    not blocked; the proxy decides what happens to the producer's leg.

    - ``at``: where to cut: a byte position, or ``after_ms``.
    - ``how``: ``rst`` (reset: SO_LINGER 0, the default), ``fin`` (graceful close) or ``half``
      (FIN in this direction only; the other direction stays open).
    """

    kind: ClassVar[str] = "kill"
    at: Position
    how: CloseHow = "rst"

    def _validate(self) -> None:
        check_position(self.at, time_ok=True)
        if self.how not in get_args(CloseHow):
            raise ValueError(f"how: must be 'rst', 'fin' or 'half' (got {self.how!r})")

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        async with rx, tx:
            reader = ItemReader(rx)
            fired_at = await forward_to(reader, tx, self.at, ctx)
            if fired_at is None:
                return  # the stream ended before `at`: everything was forwarded
            ctx.recorder.fault(self.kind, fired_at, self.how)
            await tx.send(Close(self.how))
            await tx.aclose()  # the writer sees the end right away, not after the drain
            await reader.drain()
