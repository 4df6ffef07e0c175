"""The I/O shell: the proxies' listeners and the HTTP server, in one trio nursery.

``ProxyRuntime`` is the ``Runner`` of ``api.py``: each enabled proxy is a tearline ``Proxy``
(``live=True``, so its faults change while connections are open) serving in a cancel scope of
its own inside the runtime's nursery, recording into the proxy's ``ConnectionLog``. Stopping
a proxy cancels that scope (its listener closes, its connections are closed) and waits until
it is done, so its port is free when the API answers, as in Toxiproxy.

``serve_api`` serves the ASGI app (``asgi.py``) with Hypercorn's trio worker until the
shutdown trigger fires; ``--seed`` seeds every proxy: a proxy's seed is derived from it, the
proxy's name and how many times the proxy was started.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from harness.control.addresses import AddressError, ListenAddress, join_host_port, parse_upstream
from harness.control.events import ConnectionLog
from harness.control.model import ProxyRecord
from harness.link.case_wire import live_locators
from harness.link.live import LinkTraits
from harness.proxy.server import Proxy
from harness.proxy.sockio import dial
from harness.running.assembly import fault_proxy

#: where a proxy whose listen has no host listens (only with --allow-remote)
ANY_IPV4 = "0.0.0.0"


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
        self.running: dict[int, _Running] = {}  # by id(record): populate may repeat a name

    async def start(self, record: ProxyRecord, address: ListenAddress, log: ConnectionLog) -> str:
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
        proxy.plan.set(record.faults())
        scope = trio.CancelScope()
        running = _Running(proxy, scope)
        port: int = await self.nursery.start(self._serve, running, address)
        self.running[id(record)] = running
        return join_host_port(address.host or ANY_IPV4, port)

    async def _serve(
        self,
        running: _Running,
        address: ListenAddress,
        *,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            with running.scope:
                host = address.host or ANY_IPV4
                await running.proxy.serve(host, address.port, task_status=task_status)
        finally:
            store = running.proxy.store
            if isinstance(store, ConnectionLog):
                store.close_all(trio.current_time())
            running.done.set()

    async def stop(self, record: ProxyRecord) -> None:
        running = self.running.pop(id(record), None)
        if running is None:
            return
        running.scope.cancel()
        await running.done.wait()

    def apply(self, record: ProxyRecord) -> None:
        running = self.running.get(id(record))
        if running is not None:
            running.proxy.plan.set(record.faults())

    async def stop_all(self) -> None:
        for running in list(self.running.values()):
            running.scope.cancel()
        for running in list(self.running.values()):
            await running.done.wait()
        self.running.clear()

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


async def _dial(upstream: str) -> trio.SocketStream:
    """Connect to the upstream as it is written now (Toxiproxy resolves it on every dial)."""
    try:
        host, port = parse_upstream(upstream)
    except AddressError as err:
        raise OSError(err.text) from None
    return await dial(host, port)
