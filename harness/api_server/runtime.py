"""The I/O shell: the proxies' listeners and the HTTP server, in one trio nursery.

``ProxyRuntime`` is the ``Runner`` of ``api.py`` and the one owner of the proxy table: every
request runs under ``exclusive()``, a lock held for the whole request and shielded from
cancellation, so creating, moving, disabling and deleting a proxy are atomic with respect to
each other and to the proxy's listener (a request whose client went away still finishes what
it started, and nothing it bound is left behind). Each enabled proxy is a tearline ``Proxy``
(``live=True``, so its faults change while connections are open) serving in a cancel scope of
its own inside the runtime's nursery, recording into the proxy's ``ConnectionLog``, and held
here by name. Stopping a proxy cancels that scope and waits until its listener is closed and
every connection of it is closed (its sockets, the upstream sockets, the copy threads'
duplicates), so its port is free and nothing of it forwards when the API answers, as in
Toxiproxy.

``serve_api`` (``server.py``) serves the API over HTTP until the shutdown trigger fires;
``--seed`` seeds every proxy: a proxy's seed is derived from it, the
proxy's name and how many times the proxy was started.
"""

from __future__ import annotations

import errno
import hashlib
import select
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from harness.control.addresses import AddressError, ListenAddress, join_host_port, parse_upstream
from harness.control.events import ConnectionLog
from harness.control.model import ProxyRecord
from harness.control.toxicity import aimed_at
from harness.link.case_wire import live_locators
from harness.link.live import LinkTraits
from harness.proxy.plans import FaultPlan, NamedFault
from harness.proxy.server import Proxy
from harness.proxy.sockio import dial
from harness.running.assembly import fault_proxy

#: where a proxy whose listen has no host listens (only with --allow-remote)
ANY_IPV4 = "0.0.0.0"
#: accept errors that mean "no descriptor or memory now", and the wait before the next try
#: (trio's ``serve_listeners``)
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_RETRY_S = 0.1
#: accept errors that concern one connection only (it went away first): the next is taken
ACCEPT_RETRY_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ECONNABORTED", "EPROTO", "EPERM", "ENETDOWN", "ENONET", "ETIMEDOUT", "ECONNRESET")
    if hasattr(errno, name)
)
#: the connections taken from one listener before the others get their turn
ACCEPT_BATCH = 64
#: the listen backlog (trio's, and what Linux clamps ``somaxconn`` to)
BACKLOG = 0xFFFF


def proxy_seed(seed: int, name: str, starts: int) -> int:
    """A proxy's seed: a function of the server's ``--seed``, the proxy's name and its run."""
    digest = hashlib.sha256(f"{seed}:{name}:{starts}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass(eq=False)
class _Running:
    """A running proxy: its listening socket (in the runtime's epoll set, no task of its own)
    and the cancel scope of each of its connections."""

    proxy: Proxy
    listener: socket.socket
    connections: set[trio.CancelScope] = field(default_factory=set)
    #: set once the proxy is stopped and its last connection has closed
    done: trio.Event = field(default_factory=trio.Event)
    stopped: bool = False

    def ended(self, scope: trio.CancelScope) -> None:
        self.connections.discard(scope)
        if self.stopped and not self.connections:
            self.done.set()


class ProxyRuntime:
    def __init__(
        self, nursery: trio.Nursery, *, seed: int = 0, log: Callable[[str], None] | None = None
    ) -> None:
        self.nursery = nursery
        self.seed = seed
        self.log = log
        #: the running proxies, by name: what listens is what this holds
        self.running: dict[str, _Running] = {}
        #: every running proxy's listening socket, by descriptor, in one epoll set
        self._listening: dict[int, _Running] = {}
        self._epoll = select.epoll()
        self._lock = trio.Lock()
        self._closed = False
        self._acceptor = trio.CancelScope()
        nursery.start_soon(self._accept_all)

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """One request at a time over the table and the listeners; once it holds the lock, a
        request runs to its end even if its client goes away (shielded)."""
        lock = self._lock
        if lock.locked():
            await lock.acquire()
        else:
            lock.acquire_nowait()  # (free: no one waits; the request has checkpointed enough)
        try:
            with trio.CancelScope(shield=True):
                yield
        finally:
            lock.release()

    async def start(self, record: ProxyRecord, address: ListenAddress, log: ConnectionLog) -> str:
        if self._closed:
            raise OSError("the server is shutting down")
        if record.name in self.running:  # the API stops a proxy before it starts it again
            raise RuntimeError(f"proxy {record.name!r} is running already")
        traits = LinkTraits(record.framing or None)
        proxy = fault_proxy(
            ("", 0),  # dialled through ``connect``: the upstream string is read then
            traits=traits,
            seed=proxy_seed(self.seed, record.name, record.starts),
            locators=live_locators(traits, lambda: (f for _, f in record.faults())),
            live=True,
            store=log,
            log=self._logger(record.name),
            connect=lambda: _dial(record.upstream),
        )
        proxy.plan = AimedPlan(record.faults(), log)
        host = address.host or ANY_IPV4
        listener = listen(host, address.port)  # (OSError: to the API)
        running = _Running(proxy, listener)
        self.running[record.name] = running
        self._listening[listener.fileno()] = running
        self._epoll.register(listener.fileno(), select.EPOLLIN)
        return join_host_port(host, listener.getsockname()[1])

    async def stop(self, record: ProxyRecord) -> None:
        """Close the proxy's listener and every connection of it; back once they are closed
        (at once, without a wait, when it had none)."""
        running = self.running.pop(record.name, None)
        if running is not None:
            await self._stop(running)

    async def _stop(self, running: _Running) -> None:
        fd = running.listener.fileno()
        self._epoll.unregister(fd)
        del self._listening[fd]
        running.listener.close()
        running.stopped = True
        for scope in running.connections:
            scope.cancel()
        if running.connections:
            await running.done.wait()
        store = running.proxy.store
        if isinstance(store, ConnectionLog):
            store.close_all(trio.current_time())

    def apply(self, record: ProxyRecord) -> None:
        running = self.running.get(record.name)
        if running is not None:
            running.proxy.plan.set(record.faults())

    async def stop_all(self) -> None:
        """Stop every proxy, after the request in hand; no proxy starts after this."""
        async with self.exclusive():
            self._closed = True
            stopping = list(self.running.values())
            self.running.clear()
            for running in stopping:
                await self._stop(running)
            self._acceptor.cancel()

    def open_connections(self, name: str) -> int:
        """How many connections the running proxy ``name`` holds (0 when it is not running)."""
        running = self.running.get(name)
        return 0 if running is None else running.proxy.active

    def _logger(self, name: str) -> Callable[[str], None] | None:
        """The proxy's problems, one line each (its connections are in the events, not here:
        a proxy serving thousands of connections a second would drown the console)."""
        if self.log is None:
            return None
        log = self.log

        def note(text: str) -> None:
            if not text.endswith((": open", ": closed")):
                log(f"{name}: {text}")

        return note

    # -- accepting ----------------------------------------------------------------------------
    async def _accept_all(self) -> None:
        """Accept for every proxy in this one task: it waits until the epoll set of the
        listening sockets is readable, then accepts what each ready listener has. (A task, a
        nursery and a cancel scope per proxy cost more than half of creating and deleting
        one, and a proxy a test suite creates mostly never sees a connection.)"""
        try:
            with self._acceptor:
                await self._accept_until_cancelled()
        finally:
            trio.lowlevel.notify_closing(self._epoll.fileno())
            self._epoll.close()

    async def _accept_until_cancelled(self) -> None:
        while True:
            await trio.lowlevel.wait_readable(self._epoll.fileno())
            for fd, _ in self._epoll.poll(0):
                running = self._listening.get(fd)
                if running is not None and not self._accept(running):
                    await trio.sleep(ACCEPT_RETRY_S)  # out of descriptors: as trio waits

    def _accept(self, running: _Running) -> bool:
        """Take up to ``ACCEPT_BATCH`` connections waiting on ``running``'s listener, each
        handled in a task of its own; False when the process is out of descriptors."""
        for _ in range(ACCEPT_BATCH):
            try:
                sock, _ = running.listener.accept()
            except BlockingIOError:
                return True
            except OSError as err:
                if err.errno in ACCEPT_CAPACITY_ERRNOS:
                    return False
                if err.errno in ACCEPT_RETRY_ERRNOS:
                    continue
                raise
            scope = trio.CancelScope()  # held before the task runs: a stop now cancels it
            running.connections.add(scope)
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
            self.nursery.start_soon(_connection, running, stream, scope)
        return True


def listen(host: str, port: int) -> socket.socket:
    """A non-blocking listening socket on a numeric ``host`` (set up as
    ``trio.open_tcp_listeners`` sets one up, without its address lookup)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


async def _connection(
    running: _Running, stream: trio.SocketStream, scope: trio.CancelScope
) -> None:
    try:
        with scope:
            await running.proxy.handle(stream)
    finally:
        await trio.aclose_forcefully(stream)
        running.ended(scope)


class AimedPlan(FaultPlan):
    """A live plan whose toxics may be aimed at one client address (a toxic's ``client``):
    a connection gets only the toxics aimed at its client or at nobody in particular. The
    client of connection N is the one its ``ConnectionLog`` recorded when it opened, before
    its legs asked for their faults."""

    def __init__(self, faults: Sequence[NamedFault], clients: ConnectionLog) -> None:
        super().__init__(faults, live=True)
        self.clients = clients

    def for_leg(self, direction: str, connection: int) -> tuple[NamedFault, ...]:
        faults = super().for_leg(direction, connection)
        if not any(aimed_at(fault) for _, fault in faults):
            return faults
        opened = self.clients.open.get(connection)
        client = opened.client if opened is not None else ("", 0)
        return tuple(
            (name, fault)
            for name, fault in faults
            if (target := aimed_at(fault)) is None or target.matches(client)
        )


async def _dial(upstream: str) -> trio.SocketStream:
    """Connect to the upstream as it is written now (Toxiproxy resolves it on every dial)."""
    try:
        host, port = parse_upstream(upstream)
    except AddressError as err:
        raise OSError(err.text) from None
    return await dial(host, port)
