"""The fault proxy: trio, loopback by default, one pipeline of faults per direction.

For each consumer connection the proxy opens one upstream connection to the producer and runs
two directions: ``downstream`` (producer -> consumer) and ``upstream`` (consumer -> producer).
A direction without faults is a plain copy loop reading large blocks; a direction with faults is
a chain (relay -> fault -> ... -> writer) joined by memory channels, like toxiproxy's link.

The writer owns the destination socket and turns the pipeline's items into wire events: bytes,
a read boundary (wait until the peer has read everything, ``drain.py``), FIN, RST or half-close.
EOF from the source is forwarded as a half-close (``send_eof``), so the other direction keeps
working (failure catalogue case 61). Everything the writer does goes into the ``Timeline``.
"""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import trio

from harness.drain import proc_key, wait_drained
from harness.faults.base import (
    Boundary,
    Chunk,
    Close,
    Fault,
    Heartbeat,
    Item,
    ItemRx,
    ItemTx,
    LinkContext,
    Locator,
    Position,
    PositionError,
)
from harness.timeline import Timeline

READ_BYTES = 256 * 1024
SPLIT_TIMEOUT_S = 2.0
CHANNEL_ITEMS = 1

LocatorFactory = Callable[[str, int], Locator]


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstream: tuple[str, int]
    faults: Sequence[Fault] = ()
    locators: LocatorFactory | None = None
    seed: int = 0
    read_bytes: int = READ_BYTES
    split_timeout_s: float = SPLIT_TIMEOUT_S
    connect_timeout_s: float = 5.0
    #: called with a one-line note for each connection event (``tearline proxy`` logs them)
    log: Callable[[str], None] | None = None


class _Recorder:
    def __init__(self, timeline: Timeline, connection: int, direction: str) -> None:
        self.timeline, self.connection, self.direction = timeline, connection, direction

    def fault(self, name: str, offset: int | None, detail: str) -> None:
        self.timeline.fault(
            trio.current_time(), self.connection, self.direction, name, offset, detail
        )


class OffsetsLocator:
    """Locator for a direction without an expected wire: byte offsets only."""

    def offset(self, position: object) -> int:
        assert isinstance(position, Position)
        if position.offset is None:
            raise PositionError("only byte offsets can be placed on this direction")
        return position.offset

    def frame_span(self, index: int) -> tuple[int, int]:
        raise PositionError("frame positions need the link's expected wire")

    def length_field(self, index: int) -> tuple[int, int]:
        raise PositionError("frame positions need the link's expected wire")


def reset(stream: trio.SocketStream) -> None:
    """Make the coming close an RST: SO_LINGER on with a zero timeout."""
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@dataclass(slots=True)
class _Conn:
    number: int
    client: trio.SocketStream
    upstream: trio.SocketStream
    started: float
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    #: set by the first direction that tears the whole connection down (RST, FIN, error)
    closing: bool = False
    #: bytes read from the source of each direction
    read: dict[str, int] = field(default_factory=lambda: {"downstream": 0, "upstream": 0})


class Proxy:
    def __init__(self, config: ProxyConfig, timeline: Timeline | None = None) -> None:
        self.config = config
        self.timeline = timeline or Timeline()
        self.connections = 0
        self.active = 0
        self._idle = trio.Event()
        self._idle.set()
        self._closed = trio.Event()
        self._rng = random.Random(config.seed)

    async def wait_closed_connection(self) -> None:
        """Until the next connection closes."""
        await self._closed.wait()

    async def wait_idle(self) -> None:
        """Until no connection is open (so every leg's end is in the timeline)."""
        await self._idle.wait()

    # -- serving --------------------------------------------------------------------------
    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        listeners = await trio.open_tcp_listeners(port, host=host)
        self.timeline.started = trio.current_time()
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self.handle, listeners)
            task_status.started(listeners[0].socket.getsockname()[1])

    def _log(self, note: str) -> None:
        if self.config.log is not None:
            self.config.log(note)

    async def handle(self, client: trio.SocketStream) -> None:
        self.active += 1
        self._idle = trio.Event()
        try:
            await self._handle(client)
        finally:
            self.active -= 1
            if self.active == 0:
                self._idle.set()
            self._closed.set()
            self._closed = trio.Event()

    async def _handle(self, client: trio.SocketStream) -> None:
        self.connections += 1
        number = self.connections
        now = trio.current_time()
        host, port = self.config.upstream
        upstream = None
        with trio.move_on_after(self.config.connect_timeout_s):
            try:
                upstream = await trio.open_tcp_stream(host, port)
            except OSError as err:
                self._log(f"connection {number}: upstream {host}:{port} unreachable: {err}")
        if upstream is None:
            self.timeline.ended(now, number, "downstream", "error", 0)
            reset(client)
            await client.aclose()
            return
        self._log(f"connection {number}: open")
        conn = _Conn(number, client, upstream, now)
        async with client, upstream:
            with conn.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._direction, conn, "downstream", upstream, client)
                    nursery.start_soon(self._direction, conn, "upstream", client, upstream)
        self._log(f"connection {number}: closed")

    # -- one direction ----------------------------------------------------------------------
    def _faults_for(self, direction: str, number: int) -> list[Fault]:
        return [
            f
            for f in self.config.faults
            if f.direction == direction and f.connection in (0, number)
        ]

    async def _direction(
        self, conn: _Conn, direction: str, src: trio.SocketStream, dst: trio.SocketStream
    ) -> None:
        faults = self._faults_for(direction, conn.number)
        if not faults:
            await self._copy(conn, direction, src, dst)
        else:
            await self._pipeline(conn, direction, src, dst, faults)

    async def _copy(
        self,
        conn: _Conn,
        direction: str,
        src: trio.SocketStream,
        dst: trio.SocketStream,
    ) -> str:
        """The no-fault path: big reads, one write each, nothing else."""
        while True:
            try:
                data = await src.receive_some(self.config.read_bytes)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return await self._close(conn, dst, direction, "rst", peer=True)
            if not data:
                return await self._close(conn, dst, direction, "eof")
            conn.read[direction] += len(data)
            if not await self._write(conn, direction, dst, bytes(data)):
                return await self._close(conn, dst, direction, "error")

    async def _pipeline(
        self,
        conn: _Conn,
        direction: str,
        src: trio.SocketStream,
        dst: trio.SocketStream,
        faults: list[Fault],
    ) -> str:
        first_tx, rx = trio.open_memory_channel[Item](CHANNEL_ITEMS)
        locator = (self.config.locators or (lambda d, n: OffsetsLocator()))(direction, conn.number)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._relay, conn, direction, src, first_tx)
            for fault in faults:
                tx, next_rx = trio.open_memory_channel[Item](CHANNEL_ITEMS)
                ctx = LinkContext(
                    direction=direction,  # type: ignore[arg-type]
                    locator=locator,
                    recorder=_Recorder(self.timeline, conn.number, direction),
                    rng=random.Random(self._rng.getrandbits(64)),
                    started_at=conn.started,
                )
                nursery.start_soon(fault.pipe, rx, tx, ctx)
                rx = next_rx
            how = await self._writer(conn, direction, rx, dst)
            nursery.cancel_scope.cancel()
        return how

    async def _relay(self, conn: _Conn, direction: str, src: trio.SocketStream, tx: ItemTx) -> None:
        async with tx:
            while True:
                try:
                    data = await src.receive_some(self.config.read_bytes)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    await tx.send(Close("rst"))
                    return
                if not data:
                    return
                await tx.send(Chunk(bytes(data), conn.read[direction]))
                conn.read[direction] += len(data)

    async def _writer(self, conn: _Conn, direction: str, rx: ItemRx, dst: trio.SocketStream) -> str:
        sock = dst.socket
        key = proc_key(sock)
        async with rx:
            async for item in rx:
                if isinstance(item, Chunk | Heartbeat):
                    kind = "data" if isinstance(item, Chunk) else "heartbeat"
                    if not await self._write(conn, direction, dst, item.data, kind):
                        return await self._close(conn, dst, direction, "error")
                elif isinstance(item, Boundary):
                    observed = await wait_drained(sock, key, self.config.split_timeout_s)
                    if not observed:
                        self.timeline.fault(
                            trio.current_time(),
                            conn.number,
                            direction,
                            "boundary-unobserved",
                            None,
                            item.note,
                        )
                elif isinstance(item, Close):
                    return await self._close(conn, dst, direction, item.how)
        return await self._close(conn, dst, direction, "eof")

    async def _write(
        self, conn: _Conn, direction: str, dst: trio.SocketStream, data: bytes, kind: str = "data"
    ) -> bool:
        try:
            await dst.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        self.timeline.wrote(trio.current_time(), conn.number, direction, data, kind)
        return True

    async def _close(
        self,
        conn: _Conn,
        dst: trio.SocketStream,
        direction: str,
        how: str,
        *,
        peer: bool = False,
    ) -> str:
        """Carry out an end of this direction on ``dst``; record and return how it ended.

        RST, FIN and errors end the whole connection; EOF and half-close end one direction.
        """
        if conn.closing:
            return "closed"  # the other direction already tore the connection down
        recorded = "peer-rst" if peer else how
        read = conn.read.get(direction, 0)
        self.timeline.ended(trio.current_time(), conn.number, direction, recorded, read)
        if how in ("rst", "fin", "error"):
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
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return "error"
        return "peer-rst" if peer else how
