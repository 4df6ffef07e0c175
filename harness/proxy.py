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

import contextlib
import os
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
    PositionError,
)
from harness.locator import OffsetsLocator, placement_problem
from harness.timeline import Timeline

READ_BYTES = 256 * 1024
SPLIT_TIMEOUT_S = 5.0  # a loaded machine can keep a consumer process from reading for a while
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


async def read_some(stream: trio.SocketStream, max_bytes: int) -> bytes:
    """Up to ``max_bytes`` read straight from the socket (b"" at EOF); a checkpoint.

    trio's ``receive_some`` costs a third more per small message than this (the conflict
    detector, its sandwich of checkpoints; benchmarks/bench_proxy.py). Reading before waiting
    measured faster than waiting first, even for ping-pong traffic. Errors are trio's:
    BrokenResourceError, or ClosedResourceError if the socket was closed meanwhile.
    """
    sock = stream.socket
    await trio.lowlevel.checkpoint()
    while True:
        try:
            return os.read(sock.fileno(), max_bytes)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(sock)
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err


async def send_all(stream: trio.SocketStream, data: bytes) -> None:
    """Write all of ``data`` straight to the socket, waiting only when its buffer is full (the
    caller's ``read_some`` is the checkpoint). Errors as in ``read_some``."""
    sock = stream.socket
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(sock.fileno(), view) :]
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err


def _describe(err: BaseException) -> str:
    """The error that caused ``err`` (an exception group's first leaf that is not the
    fallout, a channel or socket broken because a sibling task died), as ``Type: message``."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for inner in e.exceptions:
                walk(inner)
        else:
            leaves.append(e)

    walk(err)
    fallout = (trio.BrokenResourceError, trio.ClosedResourceError)
    cause = next((e for e in leaves if not isinstance(e, fallout)), leaves[0])
    return f"{type(cause).__name__}: {cause}"


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
    #: directions whose source reset the connection (recorded as "peer-rst", not a fault's "rst")
    peer_reset: set[str] = field(default_factory=set)


class Proxy:
    def __init__(self, config: ProxyConfig, timeline: Timeline | None = None) -> None:
        self.config = config
        self.timeline = timeline or Timeline()
        self.connections = 0
        self.active = 0
        self._idle = trio.Event()
        self._idle.set()
        self._closed = trio.Event()
        #: what went wrong on the proxy's side (unreachable upstream, a fault that could not
        #: run): the runner turns these into an ``error`` outcome, ``tearline proxy`` logs them
        self.errors: list[str] = []

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
        if self._idle.is_set():  # keep an unset event: someone may be waiting on it
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
        upstream = await self._connect_upstream(number)
        if upstream is None:
            self.timeline.ended(now, number, "downstream", "error", 0)
            reset(client)
            await client.aclose()
            return
        self._log(f"connection {number}: open")
        conn = _Conn(number, client, upstream, now)
        async with client, upstream:
            try:
                with conn.scope:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._direction, conn, "downstream", upstream, client)
                        nursery.start_soon(self._direction, conn, "upstream", client, upstream)
            except Exception as err:  # one connection's failure must not end the server
                # A fault that cannot run here (a PositionError) or a harness bug. Raising would
                # crash every connection, and trio can lose the exception in the teardown:
                # record it, and cut the consumer off so that it cannot take this for an end.
                self._error(f"connection {number}: {_describe(err)}")
                if self.timeline.end_of(number, "downstream") is None:
                    read = conn.read["downstream"]
                    self.timeline.ended(trio.current_time(), number, "downstream", "error", read)
                with contextlib.suppress(OSError):  # already closed by a leg's end
                    reset(client)
                return
        self._log(f"connection {number}: closed")

    async def _connect_upstream(self, number: int) -> trio.SocketStream | None:
        host, port = self.config.upstream
        with trio.move_on_after(self.config.connect_timeout_s):
            try:
                return await trio.open_tcp_stream(host, port)
            except OSError as err:
                self._error(f"connection {number}: upstream {host}:{port} unreachable: {err}")
                return None
        self._error(f"connection {number}: upstream {host}:{port} did not answer")
        return None

    def _error(self, note: str) -> None:
        self.errors.append(note)
        self._log(note)

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
        """The no-fault path: big reads, one write each, straight to the sockets (``read_some``,
        ``send_all``), nothing else: no digest either (no fault to prove)."""
        while True:
            try:
                data = await read_some(src, self.config.read_bytes)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return await self._close(conn, dst, direction, "rst", peer=True)
            if not data:
                return await self._close(conn, dst, direction, "eof")
            conn.read[direction] += len(data)
            try:
                await send_all(dst, data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return await self._close(conn, dst, direction, "error")
            now = trio.current_time()
            self.timeline.wrote(now, conn.number, direction, data, digest=False)

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
        for fault in faults:
            # Before any task starts: a fault that fails inside the pipeline can lose its own
            # error in the channels' teardown, leaving only the relay's broken channel.
            if problem := placement_problem(fault, locator):
                raise PositionError(f"faults[{self._index(fault)}].{problem}")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._relay, conn, direction, src, first_tx)
            for fault in faults:
                tx, next_rx = trio.open_memory_channel[Item](CHANNEL_ITEMS)
                ctx = LinkContext(
                    direction=direction,  # type: ignore[arg-type]
                    locator=locator,
                    recorder=_Recorder(self.timeline, conn.number, direction),
                    rng=self._fault_rng(conn.number, direction, fault),
                    started_at=conn.started,
                )
                nursery.start_soon(fault.pipe, rx, tx, ctx)
                rx = next_rx
            how = await self._writer(conn, direction, rx, dst)
            nursery.cancel_scope.cancel()
        return how

    def _fault_rng(self, number: int, direction: str, fault: Fault) -> random.Random:
        """The fault's own generator: a function of the seed and where the fault sits only.
        (Drawing from one shared generator would depend on which direction trio happens to
        schedule first, and ``--seed`` replays would differ.)"""
        return random.Random(f"{self.config.seed}:{number}:{direction}:{self._index(fault)}")

    def _index(self, fault: Fault) -> int:
        """Where ``fault`` is in the configured list."""
        return next(i for i, f in enumerate(self.config.faults) if f is fault)

    async def _relay(self, conn: _Conn, direction: str, src: trio.SocketStream, tx: ItemTx) -> None:
        async with tx:
            while True:
                try:
                    data = await src.receive_some(self.config.read_bytes)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    conn.peer_reset.add(direction)
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
                    peer = item.how == "rst" and direction in conn.peer_reset
                    return await self._close(conn, dst, direction, item.how, peer=peer)
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
