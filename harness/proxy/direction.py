"""One direction of one proxied connection: a plain copy loop, or a chain of fault stages.

A direction without faults is ``copy``: large reads, one write each, nothing else. A direction
with faults is ``run_chain``: one task that reads the source, feeds each read to the chain of
stages with the time, polls the chain when a stage's timer is due, and writes what comes out;
while a stage is not accepting (a stall, a slow consumer) it reads nothing, so the producer
feels the fault as backpressure. The stages are pure (``harness/faults/stage.py``): every
decision about bytes is theirs; this module only moves bytes and keeps the clock.

Items become wire events here: bytes, a read boundary (wait until the peer has read everything,
``drain.py``), FIN, RST or half-close. EOF from the source is forwarded as a half-close
(``send_eof``), so the other direction keeps working (failure catalogue case 61). Everything
written goes into the ``Timeline``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from harness.faults.items import Boundary, Chunk, Close, Direction, End, Heartbeat, Item
from harness.faults.stage import Chain
from harness.judging.timeline import HowEnded, Timeline
from harness.proxy.drain import proc_key, wait_drained
from harness.proxy.sockio import read_some, reset, send_all

_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)


@dataclass(slots=True)
class Connection:
    """One consumer connection and its upstream connection, shared by both directions."""

    number: int
    client: trio.SocketStream
    upstream: trio.SocketStream
    started: float
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    #: set by the first direction that tears the whole connection down (RST, FIN, error)
    closing: bool = False
    #: bytes read from the source of each direction
    read: dict[str, int] = field(default_factory=lambda: {"downstream": 0, "upstream": 0})


@dataclass(slots=True)
class Leg:
    """One direction: its source and destination sockets and where it is recorded."""

    conn: Connection
    direction: Direction
    src: trio.SocketStream
    dst: trio.SocketStream
    timeline: Timeline
    read_bytes: int
    split_timeout_s: float
    #: the source reset the connection (its Close("rst") is the peer's, not a fault's)
    peer_reset: bool = False

    async def copy(self) -> None:
        """The no-fault path: big reads, one write each, straight to the sockets; no digest
        either (no fault to prove)."""
        conn, direction = self.conn, self.direction
        while True:
            try:
                data = await read_some(self.src, self.read_bytes)
            except _BROKEN:
                await self.close("rst", peer=True)
                return
            if not data:
                await self.close("eof")
                return
            conn.read[direction] += len(data)
            try:
                await send_all(self.dst, data)
            except _BROKEN:
                await self.close("error")
                return
            self.timeline.wrote(trio.current_time(), conn.number, direction, data, digest=False)

    async def run_chain(self, chain: Chain) -> None:
        """Drive ``chain`` until the destination leg ends (see the module docstring)."""
        writer = _Writer(self)
        source_ended = False
        while True:
            now = trio.current_time()
            wake = chain.wake_at
            if wake is not None and wake <= now:
                items = chain.poll(now)
                await trio.lowlevel.checkpoint()  # a busy chain must still let others run
            elif chain.accepting and not source_ended:
                item = await self._read(wake)
                if item is None:
                    continue  # a timer came first
                source_ended = not isinstance(item, Chunk)
                items = chain.pipe(item, trio.current_time())
            elif wake is None:
                await trio.sleep_forever()  # held for good (a stall without end)
                continue
            else:
                await trio.sleep_until(wake)
                continue
            for item in items:
                if await writer.write(item):
                    return

    async def _read(self, wake: float | None) -> Item | None:
        """The next read as an item (End at EOF, Close("rst") when the source reset), or None
        when ``wake`` came first."""
        with trio.move_on_at(wake if wake is not None else float("inf")):
            try:
                data = await read_some(self.src, self.read_bytes)
            except _BROKEN:
                self.peer_reset = True
                return Close("rst")
            if not data:
                return End()
            offset = self.conn.read[self.direction]
            self.conn.read[self.direction] += len(data)
            return Chunk(data, offset)
        return None

    async def close(self, how: str, *, peer: bool = False) -> None:
        """Carry out an end of this direction on the destination and record how it ended.
        RST, FIN and errors end the whole connection; EOF and half-close end one direction."""
        conn, dst = self.conn, self.dst
        if conn.closing:
            return  # the other direction already tore the connection down
        recorded = HowEnded.PEER_RST if peer else HowEnded(how)
        read = conn.read.get(self.direction, 0)
        self.timeline.ended(trio.current_time(), conn.number, self.direction, recorded, read)
        if recorded in (HowEnded.RST, HowEnded.PEER_RST, HowEnded.FIN, HowEnded.ERROR):
            conn.closing = True
            conn.scope.cancel()
        try:
            if how == "rst":
                reset(dst)
                await dst.aclose()
            elif how in ("fin", "error"):
                await dst.aclose()
            else:  # "eof" (source ended) and "half" (fault): half-close, keep the reverse open
                await dst.send_eof()
        except _BROKEN:
            pass  # the peer is gone already; the end is recorded


class _Writer:
    """Turns a chain's items into writes on the destination socket."""

    def __init__(self, leg: Leg) -> None:
        self.leg = leg
        self.key = proc_key(leg.dst.socket)

    async def write(self, item: Item) -> bool:
        """Write one item; True once it ended the leg."""
        leg = self.leg
        if isinstance(item, Chunk | Heartbeat):
            try:
                await send_all(leg.dst, item.data)
            except _BROKEN:
                await leg.close("error")
                return True
            kind = "data" if isinstance(item, Chunk) else "heartbeat"
            now = trio.current_time()
            leg.timeline.wrote(now, leg.conn.number, leg.direction, item.data, kind)
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
