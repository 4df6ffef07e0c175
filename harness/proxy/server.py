"""The fault proxy: trio, loopback by default, one chain of fault stages per direction.

For each consumer connection the proxy opens one upstream connection to the producer and runs
two directions: ``downstream`` (producer -> consumer) and ``upstream`` (consumer -> producer),
each a ``Leg`` (``direction.py``): a plain copy loop when no fault applies to it, else a chain
of the faults' stages. Each fault gets its own stage per connection, with its own generator
seeded from the case seed and where the fault sits, and the direction's locator.

A case's proxy records everything in one ``Timeline``. A proxy that runs for days (``tearline
proxy``, the control API) passes a ``ConnectionStore`` instead: each connection is recorded in
a timeline of its own, which the store keeps for a while and drops (``harness/control/events.py``).

With ``ProxyConfig.tls`` the proxy terminates TLS toward the consumer and/or originates it
toward the upstream (``tlsio.py``); the legs carry plaintext either way (``sockio.py``).
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import trio

from harness.errors import HarnessError, PositionError
from harness.evidence.timeline import HowEnded, Timeline
from harness.faults.config import Fault
from harness.faults.items import Direction
from harness.faults.stage import LinkShape, Locator, Stage, StageContext
from harness.link.case_wire import setup_problem
from harness.link.exchanges import SessionExchanges
from harness.link.live import LinkTraits, LiveStream
from harness.link.locator import placement_problem
from harness.proxy.direction import Connection, Leg, Watcher
from harness.proxy.plans import FaultPlan, named
from harness.proxy.sockio import Endpoint, PlainEndpoint, TlsEndpoint, dial, reset
from harness.proxy.threadcopy import ThreadLegs
from harness.proxy.tlsio import ProxyTls, TlsError, originate, terminate
from reference_impl.defaults import LOOPBACK

READ_BYTES = 256 * 1024
SPLIT_TIMEOUT_S = 5.0  # a loaded machine can keep a consumer process from reading for a while
#: errors kept in ``Proxy.errors`` (the first ones: the cause comes first); later ones are logged
MAX_ERRORS_KEPT = 100

LocatorFactory = Callable[[Direction, int], Locator]


class ConnectionStore(Protocol):
    """Where a long-running proxy records each connection (instead of one shared timeline)."""

    def opened(self, number: int, now: float, client: tuple[str, int]) -> Timeline:
        """The timeline connection ``number`` is recorded in."""
        ...

    def closed(self, number: int, now: float) -> None:
        """Connection ``number`` ended: its legs are done."""
        ...


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
    #: opens the upstream connection (default: a TCP connection to ``upstream``); raising
    #: OSError makes it unreachable. The control API resolves its upstream string here.
    connect: Callable[[], Awaitable[trio.SocketStream]] | None = None
    #: TLS toward the consumer and/or the upstream (None: plain TCP on both sides)
    tls: ProxyTls | None = None
    #: once one direction of a connection has ended, end the connection when the other has
    #: read nothing for this long (None: never; a case's proxy ends with its deadline): a
    #: client gone in front of a silent service would otherwise hold it open for ever
    idle_after_end_s: float | None = None
    #: an MCP session's exchanges, fed every read: where faults that name a request apply
    exchanges: SessionExchanges | None = None


class _Legs:
    """The two directions of a connection: ``one_ended`` once either has; ``scope`` cancelled
    once both have (what waits on them then ends too)."""

    def __init__(self, scope: trio.CancelScope) -> None:
        self.scope = scope
        self.one_ended = trio.Event()
        self._running = 2

    async def run(self, leg: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await leg(*args)
        finally:
            self.one_ended.set()
            self._running -= 1
            if self._running == 0:
                self.scope.cancel()


class _Recorder:
    def __init__(self, timeline: Timeline, connection: int, direction: str, source: str) -> None:
        self.timeline, self.connection, self.direction = timeline, connection, direction
        self.source = source

    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None:
        where = (now, self.connection, self.direction)
        self.timeline.fault(*where, name, offset, detail, self.source)


@dataclass(slots=True)
class _SessionWatch:
    """A leg's watcher that also tells the session's exchanges every read, and the plan when
    a read made a request whole: its faults then apply from that very read on (the leg is
    woken with the bytes in hand, and its new chain takes them), never a byte later."""

    inner: Watcher | None
    exchanges: SessionExchanges
    plan: FaultPlan
    number: int
    direction: Direction

    def observe(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.observe(data)
        if self.exchanges.observe(self.direction, self.number, data):
            self.plan.resolved()

    def observe_end(self, how: str) -> None:
        if self.inner is not None:
            self.inner.observe_end(how)

    def observe_written(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.observe_written(data)

    def observe_closed(self, how: str) -> None:
        if self.inner is not None:
            self.inner.observe_closed(how)


def _as_watcher(locator: Locator) -> Watcher | None:
    """The locator as the leg's watcher, if it is one (a live locator is)."""
    return cast(Watcher, locator) if _watches(type(locator)) else None


@functools.cache
def _watches(kind: type) -> bool:
    """Whether locators of ``kind`` are watchers, asked once per class: a runtime protocol
    check walks the protocol's attributes on every call (6,000 of them were a fiftieth of a
    profile of 3,000 short connections)."""
    return issubclass(kind, Watcher)


def _describe(err: BaseException, number: int) -> str:
    """The error that caused ``err`` (an exception group's first leaf that is not the
    fallout, a socket broken because a sibling task died): a harness error as its own line
    (a fault that cannot be placed: the same on every connection), anything else (a bug) as
    ``connection N: Type: message``."""
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
    if isinstance(cause, HarnessError):
        return cause.text
    return f"connection {number}: {type(cause).__name__}: {cause}"


class Proxy:
    def __init__(
        self,
        config: ProxyConfig,
        timeline: Timeline | None = None,
        *,
        live: bool = False,
        store: ConnectionStore | None = None,
    ) -> None:
        self.config = config
        self.timeline = timeline or Timeline()
        #: with a store, each connection is recorded apart (``timeline`` then stays empty)
        self.store = store
        #: the faults, by name; with ``live`` they may change while connections are open
        self.plan = FaultPlan(named(config.faults), live=live, exchanges=config.exchanges)
        #: the legs that may copy in threads at once (``threadcopy.py``)
        self.threads = ThreadLegs()
        self.connections = 0
        self.active = 0
        self._idle = trio.Event()
        self._idle.set()
        self._closed = trio.Event()
        self._first = trio.Event()
        #: when the first connection was accepted (trio's clock; None: none yet)
        self.first_connection_at: float | None = None
        #: what went wrong on the proxy's side (unreachable upstream, a fault that could not
        #: run): the runner turns these into an ``error`` outcome, ``tearline proxy`` logs them
        self.errors: list[str] = []

    async def wait_closed_connection(self) -> None:
        """Until the next connection closes."""
        await self._closed.wait()

    async def wait_first_connection(self) -> float:
        """Until a connection has been accepted; when the first was (trio's clock)."""
        await self._first.wait()
        assert self.first_connection_at is not None
        return self.first_connection_at

    async def wait_idle(self) -> None:
        """Until no connection is open (so every leg's end is in the timeline)."""
        await self._idle.wait()

    # -- serving --------------------------------------------------------------------------
    async def serve(
        self,
        host: str = LOOPBACK,
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
        if self.first_connection_at is None:
            self.first_connection_at = trio.current_time()
            self._first.set()
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
        if self.store is None:
            await self._connection(client, number, now, self.timeline)
            return
        try:
            peer = client.socket.getpeername()
        except OSError:  # gone already
            peer = ("", 0)
        timeline = self.store.opened(number, now, (str(peer[0]), int(peer[1])))
        try:
            await self._connection(client, number, now, timeline)
        finally:
            self.store.closed(number, trio.current_time())

    async def _connection(
        self, transport: trio.SocketStream, number: int, now: float, timeline: Timeline
    ) -> None:
        client = await self._accept(transport, number)
        upstream = None if client is None else await self._connect_upstream(number, client)
        if client is None or upstream is None:
            timeline.ended(now, number, "downstream", HowEnded.ERROR, 0)
            reset(transport)
            await transport.aclose()
            return
        self._log(f"connection {number}: open")
        conn = Connection(number, client, upstream, now)
        async with contextlib.aclosing(client), contextlib.aclosing(upstream):
            try:
                with conn.scope:
                    async with trio.open_nursery() as nursery:
                        legs = _Legs(nursery.cancel_scope)
                        if self.config.idle_after_end_s is not None:
                            idle = self.config.idle_after_end_s
                            nursery.start_soon(self._idle_after_end, conn, legs, idle)
                        args = (conn, timeline)
                        nursery.start_soon(
                            legs.run, self._direction, *args, "downstream", upstream, client
                        )
                        # (this task is the other direction's: a task fewer per connection)
                        await legs.run(self._direction, *args, "upstream", client, upstream)
            except Exception as err:  # one connection's failure must not end the server
                # A fault that cannot run here (a PositionError) or a harness bug. Raising would
                # crash every connection, and trio can lose the exception in the teardown:
                # record it, and cut the consumer off so that it cannot take this for an end.
                self._error(_describe(err, number))
                if timeline.end_of(number, "downstream") is None:
                    read = conn.read["downstream"]
                    when = trio.current_time()
                    timeline.ended(when, number, "downstream", HowEnded.ERROR, read)
                with contextlib.suppress(OSError):  # already closed by a leg's end
                    client.reset()
                return
        self._log(f"connection {number}: closed")

    async def _idle_after_end(self, conn: Connection, legs: _Legs, idle_s: float) -> None:
        """Once a direction has ended, end the connection when nothing was read for
        ``idle_s`` (polled every ``idle_s``: a leg in a thread counts its reads too)."""
        await legs.one_ended.wait()
        while True:
            before = sum(conn.read.values())
            await trio.sleep(idle_s)
            if sum(conn.read.values()) == before:
                self._log(
                    f"connection {conn.number}: one side ended and the other sent nothing for "
                    f"{idle_s:g} s: closing"
                )
                legs.scope.cancel()
                return

    async def _accept(self, transport: trio.SocketStream, number: int) -> Endpoint | None:
        """The consumer's end: plain, or TLS once its handshake is done (None if it failed)."""
        tls = self.config.tls
        if tls is None or tls.terminate is None:
            return PlainEndpoint(transport)
        try:
            stream = await terminate(transport, tls.terminate, tls.handshake_timeout_s)
        except TlsError as err:
            hint = "does the consumer trust the run's CA ({ca_file})?"
            self._error(
                f"connection {number}: TLS handshake with the consumer failed: {err}; {hint}"
            )
            return None
        return TlsEndpoint(stream)

    async def _connect_upstream(self, number: int, client: Endpoint) -> Endpoint | None:
        """The upstream's end, plain or TLS (offering the protocol the consumer chose), or
        None when it cannot be had (recorded in ``errors``)."""
        transport = await self._dial_upstream(number)
        tls = self.config.tls
        if transport is None or tls is None or tls.originate is None:
            return None if transport is None else PlainEndpoint(transport)
        chosen = client.stream.selected_alpn_protocol() if isinstance(client, TlsEndpoint) else None
        alpn = (chosen,) if chosen else tls.alpn
        try:
            stream = await originate(transport, tls.originate, alpn, tls.handshake_timeout_s)
        except TlsError as err:
            host, port = self.config.upstream
            self._error(f"connection {number}: upstream {host}:{port}: TLS: {err}")
            await transport.aclose()
            return None
        return TlsEndpoint(stream)

    async def _dial_upstream(self, number: int) -> trio.SocketStream | None:
        host, port = self.config.upstream
        connect = self.config.connect
        with trio.move_on_after(self.config.connect_timeout_s):
            try:
                if connect is not None:
                    return await connect()
                return await dial(host, port)
            except OSError as err:
                self._error(f"connection {number}: upstream {host}:{port} unreachable: {err}")
                return None
        self._error(f"connection {number}: upstream {host}:{port} did not answer")
        return None

    def _error(self, note: str) -> None:
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(note)
        self._log(note)

    # -- one direction ----------------------------------------------------------------------
    async def _direction(
        self,
        conn: Connection,
        timeline: Timeline,
        direction: Direction,
        src: Endpoint,
        dst: Endpoint,
    ) -> None:
        config = self.config
        factory = config.locators or (lambda d, n: LiveStream(LinkTraits()))
        locator = factory(direction, conn.number)

        def build(name: str, fault: Fault) -> Stage:
            """The stage of one fault on this leg, checked before any byte reaches it (a fault
            that fails later would look to the consumer like a link that misbehaves)."""
            if problem := placement_problem(fault, locator):
                key = int(name) if name.isdigit() else name  # a case's faults: faults[i]
                raise PositionError(problem.message, path=("faults", key, *problem.path))
            ctx = StageContext(
                direction=direction,
                locator=locator,
                recorder=_Recorder(timeline, conn.number, direction, name),
                rng=self._fault_rng(conn.number, direction, name),
                started_at=conn.started,
                shape=config.shape,
            )
            return fault.stage(ctx)

        watched = self._watched(conn, direction)
        offload = self._offloadable(timeline, (src, dst))
        leg = Leg(
            conn,
            direction,
            src,
            dst,
            timeline,
            config.read_bytes,
            config.split_timeout_s,
            plan=self.plan,
            build=build,
            watcher=self._watcher(conn.number, direction, locator, watched),
            threads=self.threads if offload else None,
        )
        try:
            await leg.run()
        finally:
            if direction == "downstream" and isinstance(locator, LiveStream):
                self._say_undecoded(conn.number, locator)

    def _watcher(
        self, number: int, direction: Direction, locator: Locator, watched: bool
    ) -> Watcher | None:
        """The leg's watcher: its locator (when it must see the bytes), and the session's
        exchanges when faults name a request."""
        inner = _as_watcher(locator) if watched else None
        exchanges = self.config.exchanges
        if exchanges is None:
            return inner
        return _SessionWatch(inner, exchanges, self.plan, number, direction)

    def _say_undecoded(self, number: int, stream: LiveStream) -> None:
        """Once, at the leg's end: why the service's stream was not decoded for positions (it
        does not speak the framing; a message past the decoders' limit)."""
        framing = stream.traits.framing
        if framing is None:
            return
        if problem := setup_problem(stream):
            self._log(f"connection {number}: the service does not speak {framing}: {problem}")
        elif stream.over_limit:
            self._log(f"connection {number}: {stream.over_limit}")
        elif not stream.seen and stream.eof is not None:
            how = "reset" if stream.eof == "rst" else "closed"
            self._log(f"connection {number}: the service {how} the connection before a byte")

    def _offloadable(self, timeline: Timeline, ends: tuple[Endpoint, Endpoint]) -> bool:
        """Whether the leg may run in a thread (``threadcopy.py``, ``threadchain.py``): its
        timeline keeps counts only and takes records from threads (a long-running proxy's)
        and both ends are plain TCP."""
        return timeline.thread_safe() and all(isinstance(end, PlainEndpoint) for end in ends)

    def _watched(self, conn: Connection, direction: Direction) -> bool:
        """Whether the leg's locator must see its bytes: always when the caller gave one (a
        case's evidence), else only while a fault can come to this leg (each read observed
        costs the bare copy loop a tenth of its round trip)."""
        return (
            self.config.locators is not None
            or self.plan.live
            or bool(self.plan.for_leg(direction, conn.number))
        )

    def _fault_rng(self, number: int, direction: str, name: str) -> random.Random:
        """The fault's own generator: a function of the seed and where the fault sits only.
        (Drawing from one shared generator would depend on which direction trio happens to
        schedule first, and ``--seed`` replays would differ.)"""
        return random.Random(f"{self.config.seed}:{number}:{direction}:{name}")
