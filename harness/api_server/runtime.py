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


def proxy_seed(seed: int, name: str, starts: int) -> int:
    """A proxy's seed: a function of the server's ``--seed``, the proxy's name and its run."""
    digest = hashlib.sha256(f"{seed}:{name}:{starts}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass
class _Running:
    proxy: Proxy
    scope: trio.CancelScope
    done: trio.Event = field(default_factory=trio.Event)


class ProxyRuntime:
    def __init__(
        self, nursery: trio.Nursery, *, seed: int = 0, log: Callable[[str], None] | None = None
    ) -> None:
        self.nursery = nursery
        self.seed = seed
        self.log = log
        #: the running proxies, by name: what listens is what this holds
        self.running: dict[str, _Running] = {}
        self._lock = trio.Lock()
        self._closed = False

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """One request at a time over the table and the listeners; once it holds the lock, a
        request runs to its end even if its client goes away (shielded)."""
        async with self._lock:
            with trio.CancelScope(shield=True):
                yield

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
        scope = trio.CancelScope()
        running = _Running(proxy, scope)
        host = address.host or ANY_IPV4
        listeners = await trio.open_tcp_listeners(address.port, host=host)  # (OSError: to the API)
        self.running[record.name] = running
        self.nursery.start_soon(self._serve, running, listeners)
        return join_host_port(host, listeners[0].socket.getsockname()[1])

    async def _serve(self, running: _Running, listeners: list[trio.SocketListener]) -> None:
        """Accept on ``listeners`` until stopped, each connection handled by the proxy in a
        task under ``running.scope``; then every socket of it is closed. (Bound before, in
        the request: one task per proxy, not ``Proxy.serve``'s three and its start-up
        handshakes, which were half of what creating a proxy cost.)"""
        try:
            with running.scope:
                async with trio.open_nursery() as connections:
                    for listener in listeners[1:]:
                        connections.start_soon(_accept, listener, running.proxy, connections)
                    await _accept(listeners[0], running.proxy, connections)
        finally:
            for listener in listeners:  # (stopped before it ran: closed here)
                await trio.aclose_forcefully(listener)
            store = running.proxy.store
            if isinstance(store, ConnectionLog):
                store.close_all(trio.current_time())
            running.done.set()

    async def stop(self, record: ProxyRecord) -> None:
        running = self.running.pop(record.name, None)
        if running is None:
            return
        running.scope.cancel()
        await running.done.wait()

    def apply(self, record: ProxyRecord) -> None:
        running = self.running.get(record.name)
        if running is not None:
            running.proxy.plan.set(record.faults())

    async def stop_all(self) -> None:
        """Stop every proxy, after the request in hand; no proxy starts after this."""
        async with self.exclusive():
            self._closed = True
            for running in self.running.values():
                running.scope.cancel()
            for running in self.running.values():
                await running.done.wait()
            self.running.clear()

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


async def _accept(listener: trio.SocketListener, proxy: Proxy, connections: trio.Nursery) -> None:
    """``trio.serve_listeners`` for one listener, in the proxy's own task (a task and a
    nursery fewer per proxy): each connection handled in ``connections``; out of descriptors,
    it waits and tries again, as trio's does."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as err:
            if err.errno not in ACCEPT_CAPACITY_ERRNOS:
                raise
            await trio.sleep(ACCEPT_RETRY_S)
            continue
        connections.start_soon(_connection, proxy, stream)


async def _connection(proxy: Proxy, stream: trio.SocketStream) -> None:
    try:
        await proxy.handle(stream)
    finally:
        await trio.aclose_forcefully(stream)


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
