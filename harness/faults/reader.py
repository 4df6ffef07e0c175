"""The plumbing every fault shares: read items with push-back, forward them up to a position.

A fault's ``pipe`` is a few calls into this module::

    async with rx, tx:
        reader = ItemReader(rx)
        fired_at = await forward_to(reader, tx, self.at, ctx)   # None: the stream ended first
        if fired_at is not None:
            ...                                                # the fault itself
        await forward_all(reader, tx)

Positions are offsets in the producer's original stream (``Chunk.offset``), so faults chained in
one direction all see the same positions, whatever the faults before them dropped or inserted.
A chunk that straddles a position is cut there (``split_chunk``); its tail waits in the reader.

Nothing here reads ahead: a fault that stops calling the reader stops pulling from ``rx``, and
backpressure reaches the relay and then the producer (memory stays bounded by one item).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from harness.faults.base import (
    Chunk,
    Close,
    Item,
    ItemRx,
    ItemTx,
    LinkContext,
    Position,
    rewrite_chunk,
    split_chunk,
)


class ItemReader:
    """``rx`` with push-back and the stream position.

    ``position`` is the end offset of the last chunk handed out. A ``Close`` is handed out like
    any item, and ends the stream: what follows it in ``rx`` is read and discarded (the writer
    would drop it anyway), so the relay feeding ``rx`` is never left blocked.
    """

    def __init__(self, rx: ItemRx) -> None:
        self._rx = rx
        self._back: list[Item] = []  # a stack: the last item pushed back comes out first
        self._closed = False
        self._ended = False
        self.position = 0

    @property
    def finished(self) -> bool:
        """``rx`` ended, or a ``Close`` was handed out: no more items will come."""
        return self._ended or self._closed

    def push_back(self, item: Item) -> None:
        """Return an item handed out (or a chunk's tail); it comes out next."""
        self._back.append(item)
        if isinstance(item, Chunk):
            self.position = min(self.position, item.offset)

    async def next(self) -> Item | None:
        """The next item, or None at the end of the stream."""
        return await self.next_before(None)

    async def next_before(self, offset: int | None) -> Item | None:
        """The next item before stream ``offset`` (a straddling chunk is cut; its tail waits),
        or None once the stream has reached ``offset`` or ended (then ``finished`` is true).

        Returns None as soon as ``position >= offset``, without waiting for the next item: a
        fault placed at the end of what has arrived fires now, not when more bytes come.
        """
        while offset is None or self.position < offset:
            item = await self._receive()
            if item is None:
                return None
            if isinstance(item, Close):
                self._closed = True
                return item
            if not isinstance(item, Chunk):
                return item
            if not item.data:
                continue
            before, after = (item, None) if offset is None else split_chunk(item, offset)
            if after is not None:
                self._back.append(after)
            if before is None:  # the next bytes start at or after offset (an earlier drop)
                return None
            self.position = before.end
            return before
        return None

    async def at_end(self) -> bool:
        """Wait for the next item and say whether the stream ended instead (peek)."""
        item = await self._receive()
        if item is None:
            return True
        self._back.append(item)
        return False

    async def drain(self) -> int:
        """Read the rest of the stream and discard it; return how many bytes were discarded.

        A fault that ends the stream early (kill) keeps reading so that the relay feeding
        ``rx`` is not left blocked on a full channel until the proxy tears the link down.
        """
        dropped = sum(len(item.data) for item in self._back if isinstance(item, Chunk))
        self._back.clear()
        if not self._ended:
            async for item in self._rx:
                if isinstance(item, Chunk):
                    dropped += len(item.data)
            self._ended = True
        return dropped

    async def _receive(self) -> Item | None:
        if self._back:
            return self._back.pop()
        if self._closed and not self._ended:
            await self.drain()
        if self._ended:
            return None
        try:
            return await self._rx.receive()
        except trio.EndOfChannel:
            self._ended = True
            return None


async def forward_all(reader: ItemReader, tx: ItemTx) -> None:
    """Forward every remaining item unchanged."""
    while (item := await reader.next()) is not None:
        await tx.send(item)


async def forward_until(reader: ItemReader, tx: ItemTx, offset: int) -> bool:
    """Forward items up to stream ``offset``; True if the stream reached it, False if it ended
    (or was closed) first, having forwarded everything."""
    while (item := await reader.next_before(offset)) is not None:
        await tx.send(item)
    return not reader.finished


async def forward_until_time(reader: ItemReader, tx: ItemTx, deadline: float) -> bool:
    """Forward items until trio time ``deadline``; True if the deadline came before the end.

    An item whose send the deadline interrupted was not delivered (trio's channels are atomic
    under cancellation): it goes back to the reader, and ``position`` is the next unsent byte.
    """
    with trio.move_on_at(deadline):
        while (item := await reader.next()) is not None:
            delivered = False
            try:
                await tx.send(item)
                delivered = True
            finally:
                if not delivered:
                    reader.push_back(item)
        return False
    return not reader.finished


async def forward_to(reader: ItemReader, tx: ItemTx, at: Position, ctx: LinkContext) -> int | None:
    """Forward items up to ``at``; return the stream offset where the fault fires, or None when
    the stream ended first (everything was forwarded; the fault never fired).

    ``after_ms`` counts from ``ctx.started_at`` (the connection's first byte), read once the
    first item has reached the fault (so a runner that sets it when that byte arrives is in
    time); the fault fires between the bytes forwarded before that time and the rest. Other
    positions are resolved with ``ctx.locator`` (a PositionError is a scenario mistake, and
    propagates).
    """
    if at.after_ms is not None:
        if await reader.at_end():
            return None
        deadline = ctx.started_at + at.after_ms / 1000
        return reader.position if await forward_until_time(reader, tx, deadline) else None
    offset = ctx.locator.offset(at)
    return offset if await forward_until(reader, tx, offset) else None


async def collect_until(reader: ItemReader, offset: int) -> list[Item]:
    """Take (without forwarding) the items before stream ``offset``."""
    items: list[Item] = []
    while (item := await reader.next_before(offset)) is not None:
        items.append(item)
    return items


async def rewrite_range(
    reader: ItemReader, tx: ItemTx, start: int, end: int, byte_at: Callable[[int, int], int]
) -> int:
    """Forward items until the stream passes ``end``, each byte at offset ``p`` in
    ``[start, end)`` replaced by ``byte_at(p, old)``; return how many bytes were rewritten.
    Chunks are not cut: the consumer's reads look exactly as without the fault."""
    changed = 0
    while reader.position < end and (item := await reader.next()) is not None:
        if isinstance(item, Chunk):
            item, count = rewrite_chunk(item, start, end, byte_at)
            changed += count
        await tx.send(item)
    return changed
