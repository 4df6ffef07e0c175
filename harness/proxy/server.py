"""The fault proxy: trio, loopback by default, one chain of fault stages per direction.

For each consumer connection the proxy opens one upstream connection to the producer and runs
two directions: ``downstream`` (producer -> consumer) and ``upstream`` (consumer -> producer),
each a ``Leg`` (``direction.py``): a plain copy loop when no fault applies to it, else a chain
of the faults' stages. Each fault gets its own stage per connection, with its own generator
seeded from the case seed and where the fault sits, and the direction's locator.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import trio

from harness.errors import PositionError
from harness.faults.config import Fault
from harness.faults.items import Direction
from harness.faults.stage import Chain, LinkShape, Locator, StageContext
from harness.judging.timeline import HowEnded, Timeline
from harness.link.locator import OffsetsLocator, placement_problem
from harness.proxy.direction import Connection, Leg
from harness.proxy.sockio import reset

READ_BYTES = 256 * 1024
SPLIT_TIMEOUT_S = 5.0  # a loaded machine can keep a consumer process from reading for a while

LocatorFactory = Callable[[Direction, int], Locator]


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstream: tuple[str, int]
    faults: Sequence[Fault] = ()
    locators: LocatorFactory | None = None
    seed: int = 0
    read_bytes: int = READ_BYTES
    split_timeout_s: float = SPLIT_TIMEOUT_S
    connect_timeout_s: float = 5.0
    #: the link's framing, for faults whose bytes depend on it (heartbeats)
    shape: LinkShape = field(default_factory=LinkShape)
    #: called with a one-line note for each connection event (``tearline proxy`` logs them)
    log: Callable[[str], None] | None = None


class _Recorder:
    def __init__(self, timeline: Timeline, connection: int, direction: str) -> None:
        self.timeline, self.connection, self.direction = timeline, connection, direction

    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None:
        self.timeline.fault(now, self.connection, self.direction, name, offset, detail)


def _describe(err: BaseException) -> str:
    """The error that caused ``err`` (an exception group's first leaf that is not the
    fallout, a socket broken because a sibling task died), as ``Type: message``."""
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
            self.timeline.ended(now, number, "downstream", HowEnded.ERROR, 0)
            reset(client)
            await client.aclose()
            return
        self._log(f"connection {number}: open")
        conn = Connection(number, client, upstream, now)
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
                    when = trio.current_time()
                    self.timeline.ended(when, number, "downstream", HowEnded.ERROR, read)
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
    def _faults_for(self, direction: Direction, number: int) -> list[tuple[int, Fault]]:
        return [
            (index, f)
            for index, f in enumerate(self.config.faults)
            if f.direction == direction and f.connection in (0, number)
        ]

    async def _direction(
        self,
        conn: Connection,
        direction: Direction,
        src: trio.SocketStream,
        dst: trio.SocketStream,
    ) -> None:
        config = self.config
        leg = Leg(
            conn, direction, src, dst, self.timeline, config.read_bytes, config.split_timeout_s
        )
        faults = self._faults_for(direction, conn.number)
        if not faults:
            await leg.copy()
        else:
            await leg.run_chain(self._chain(conn, direction, faults))

    def _chain(
        self, conn: Connection, direction: Direction, faults: list[tuple[int, Fault]]
    ) -> Chain:
        """Each fault's stage for this connection, checked before any byte moves (a fault that
        fails later would look to the consumer like a link that misbehaves)."""
        factory = self.config.locators or (lambda d, n: OffsetsLocator())
        locator = factory(direction, conn.number)
        stages = []
        for index, fault in faults:
            if problem := placement_problem(fault, locator):
                raise PositionError(problem.message, path=("faults", index, *problem.path))
            ctx = StageContext(
                direction=direction,
                locator=locator,
                recorder=_Recorder(self.timeline, conn.number, direction),
                rng=self._fault_rng(conn.number, direction, index),
                started_at=conn.started,
                shape=self.config.shape,
            )
            stages.append(fault.stage(ctx))
        return Chain(stages)

    def _fault_rng(self, number: int, direction: str, index: int) -> random.Random:
        """The fault's own generator: a function of the seed and where the fault sits only.
        (Drawing from one shared generator would depend on which direction trio happens to
        schedule first, and ``--seed`` replays would differ.)"""
        return random.Random(f"{self.config.seed}:{number}:{direction}:{index}")
