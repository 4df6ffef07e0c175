"""How a leg's chain's items become wire events: bytes written (a run of a slicer's pieces
through one hot loop), a read boundary waited for (``drain.py``), or the leg's end.

Everything written goes into the leg's ``Timeline``; ``Leg.close`` (``direction.py``) carries
out an end.
"""

from __future__ import annotations

from typing import Protocol, cast

import trio

from harness.evidence.timeline import Timeline
from harness.faults.items import Boundary, Chunk, Close, Heartbeat, Item
from harness.proxy.drain import proc_key, wait_drained
from harness.proxy.sockio import Endpoint

#: what a write to a peer that is gone raises
BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)


class _Numbered(Protocol):
    @property
    def number(self) -> int: ...


class _Observer(Protocol):
    def observe_written(self, data: bytes) -> None: ...


class Leg(Protocol):
    """What the writer needs of its leg (``direction.Leg``)."""

    @property
    def conn(self) -> _Numbered: ...

    @property
    def direction(self) -> str: ...

    @property
    def dst(self) -> Endpoint: ...

    @property
    def timeline(self) -> Timeline: ...

    @property
    def watcher(self) -> _Observer | None: ...

    @property
    def split_timeout_s(self) -> float: ...

    @property
    def peer_reset(self) -> bool: ...

    async def close(self, how: str, *, peer: bool = False) -> None: ...


class Writer:
    """Turns a chain's items into writes on the destination socket."""

    def __init__(self, leg: Leg) -> None:
        self.leg = leg
        self.key = proc_key(leg.dst.socket)

    async def write_all(self, items: list[Item]) -> bool:
        """Write the items in order; True once one of them ended the leg. A run of chunks (a
        slicer's pieces) goes through ``write_chunks``, the hot loop."""
        start = 0
        while start < len(items):
            end = start
            while end < len(items) and type(items[end]) is Chunk:
                end += 1
            if end > start:
                if await self.write_chunks(items, start, end):
                    return True
                start = end
                continue
            if await self.write(items[start]):
                return True
            start += 1
        return False

    async def write_chunks(self, items: list[Item], start: int, end: int) -> bool:
        """Write ``items[start:end]`` (all chunks), one write each, each recorded; True if the
        destination broke. What ``write`` does for one chunk, with the lookups hoisted, no
        coroutine for a write the buffer takes at once, and only counts on a timeline that
        keeps nothing else (one update for the run): at 64 bytes a piece, the per-piece
        overhead was larger than the write itself (proxy CPU 7.3 -> 6.2 us a piece)."""
        leg = self.leg
        dst, timeline, watcher = leg.dst, leg.timeline, leg.watcher
        number, direction = leg.conn.number, leg.direction
        clock, counted = trio.lowlevel.current_clock(), timeline.keeps_nothing()
        writes = size = 0
        broken = False
        try:
            for index in range(start, end):
                data = cast(Chunk, items[index]).data  # write_all hands runs of chunks only
                done = dst.write_now(data)
                if done != len(data):
                    await dst.send_all(data[done:])
                if counted:
                    writes, size = writes + 1, size + len(data)
                else:
                    timeline.wrote(clock.current_time(), number, direction, data)
                if watcher is not None:
                    watcher.observe_written(data)
        except BROKEN:
            broken = True
        finally:
            timeline.counted(number, direction, writes, size)
        if broken:
            await leg.close("error")
        return broken

    async def write(self, item: Item) -> bool:
        """Write one item; True once it ended the leg."""
        leg = self.leg
        if isinstance(item, Chunk | Heartbeat):
            try:
                await leg.dst.send_all(item.data)
            except BROKEN:
                await leg.close("error")
                return True
            kind = "data" if isinstance(item, Chunk) else item.kind
            now = trio.current_time()
            leg.timeline.wrote(now, leg.conn.number, leg.direction, item.data, kind)
            if leg.watcher is not None:
                leg.watcher.observe_written(item.data)
            return False
        if isinstance(item, Boundary):
            observed = await wait_drained(leg.dst.socket, self.key, leg.split_timeout_s)
            if not observed:
                now = trio.current_time()
                conn = leg.conn.number
                leg.timeline.fault(now, conn, leg.direction, "boundary-unobserved", None, item.note)
            return False
        if isinstance(item, Close):
            await leg.close(item.how, peer=item.how == "rst" and leg.peer_reset)
        else:
            await leg.close("eof")
        return True
