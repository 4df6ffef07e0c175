"""The control API: Toxiproxy's endpoints over the records of ``model.py``, plus tearline's.

``ControlApi.handle(request)`` routes one request (``routes.py``), runs its handler and says
what to answer; it never raises, and every error it answers is Toxiproxy's JSON body (a bug
too: a 500 with its text). Starting and stopping proxies is the only I/O, and it goes through
a ``Runner`` (``runtime.py`` runs real listeners; tests use a fake), so everything here is
tested without sockets. Every handler runs inside ``Runner.exclusive()``: one request at a
time reads and changes the table of proxies, from its first check to its answer, so a name is
created once, a proxy deleted twice at once is deleted once (the other answers 404), and no
listener outlives its entry. Handlers follow Toxiproxy's order of checks and its status codes
(``docs/proxy-api.md`` lists where tearline answers differently, and why).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from harness.control.addresses import (
    AddressError,
    ListenAddress,
    bind_error,
    parse_listen,
    refused_remote,
    resolve_listen,
)
from harness.control.events import DEFAULT_WINDOW, ConnectionLog
from harness.control.metrics import CONTENT_TYPE, Source, exposition, registry_for
from harness.control.model import (
    CREATED,
    ApiError,
    ProxyRecord,
    new_toxic,
    read_populate,
    read_proxy,
    read_update,
    updated_toxic,
)
from harness.control.routes import Matched, Reply, RequestIds, RouterReply, Wire, error, match
from harness.control.routes import render as render_reply

#: what ``GET /version`` reports: Toxiproxy's version that tearline's API follows (clients
#: compare it: the Ruby client uses PATCH from 2.6.0 on), then tearline's own
VERSION = "2.12.0-tearline.0.1.0"
BROWSER_PREFIX = "Mozilla/"
#: the answer to a body over the server's bound (Go's ``http.MaxBytesReader`` text)
BODY_TOO_LARGE = "bad request body: http: request body too large"


class Runner(Protocol):
    """What runs the proxies (listeners and their connections)."""

    async def start(self, record: ProxyRecord, address: ListenAddress, log: ConnectionLog) -> str:
        """Listen on ``address`` and serve ``record``; the address bound, as Go writes it.
        Raises OSError when it cannot listen."""
        ...

    async def stop(self, record: ProxyRecord) -> None:
        """Stop listening and close every connection of ``record`` (no-op if not running)."""
        ...

    def apply(self, record: ProxyRecord) -> None:
        """``record``'s toxics changed: open and new connections follow."""
        ...

    def exclusive(self) -> AbstractAsyncContextManager[None]:
        """Held around each request: one at a time, and a request that holds it runs to its
        end even if its client goes away (nothing it started is left half done)."""
        ...


@dataclass(frozen=True, slots=True)
class ApiRequest:
    method: str
    path: str  # percent-decoded
    body: bytes = b""
    user_agent: str = ""
    query: str = ""
    #: the body was longer than the server's bound (only its start is in ``body``)
    too_large: bool = False


class ControlApi:
    def __init__(
        self,
        runner: Runner,
        *,
        allow_remote: bool = False,
        window: int = DEFAULT_WINDOW,
        log: Callable[[str], None] = lambda note: None,
    ) -> None:
        self.runner = runner
        self.log = log
        self.allow_remote = allow_remote
        self.window = window
        self.proxies: dict[str, ProxyRecord] = {}
        self.logs: dict[str, ConnectionLog] = {}
        self.ids = RequestIds()
        self.registry = registry_for(self._sources)
        self._handlers: dict[str, Callable[[ApiRequest, dict[str, str]], Awaitable[Reply]]] = {
            "reset": self.reset,
            "proxy_index": self.proxy_index,
            "proxy_create": self.proxy_create,
            "populate": self.populate,
            "proxy_show": self.proxy_show,
            "proxy_update": self.proxy_update,
            "proxy_delete": self.proxy_delete,
            "toxic_index": self.toxic_index,
            "toxic_create": self.toxic_create,
            "toxic_show": self.toxic_show,
            "toxic_update": self.toxic_update,
            "toxic_delete": self.toxic_delete,
            "version": self.version,
            "metrics": self.metrics,
            "events": self.events,
            "proxy_events": self.proxy_events,
        }

    # -- dispatch ---------------------------------------------------------------------------
    async def handle(self, request: ApiRequest) -> Wire:
        """The answer to ``request``, ready for the wire."""
        found = match(request.method, request.path, request.query)
        if isinstance(found, RouterReply):
            return render_reply(found, None)
        request_id = self.ids.next()
        if request.user_agent.startswith(BROWSER_PREFIX):
            refused = Reply(403, "text", text="User agent not allowed\n")
            return render_reply(refused, request_id)
        if request.too_large:
            return render_reply(error(413, BODY_TOO_LARGE), request_id)
        return render_reply(await self.answer(found, request), request_id)

    async def answer(self, found: Matched, request: ApiRequest) -> Reply:
        async with self.runner.exclusive():
            try:
                return await self._handlers[found.handler](request, found.params)
            except ApiError as err:
                return error(err.status, err.text)
            except Exception as err:  # a bug: Toxiproxy's 500 with its text, and the server goes on
                text = f"{type(err).__name__}: {err}"
                self.log(f"{request.method} {request.path}: internal error: {text}")
                return error(500, text)

    # -- helpers ----------------------------------------------------------------------------
    def _proxy(self, params: dict[str, str]) -> ProxyRecord:
        record = self.proxies.get(params["proxy"])
        if record is None:
            raise ApiError("proxy not found", 404)
        return record

    def _log(self, name: str) -> ConnectionLog:
        log = self.logs.get(name)
        if log is None:
            log = self.logs[name] = ConnectionLog(self.window)
        return log

    async def _start(self, record: ProxyRecord) -> None:
        """Listen for ``record``; ``ApiError`` 500 with Go's text when it cannot."""
        try:
            address = parse_listen(record.listen)
        except AddressError as err:
            raise ApiError(err.text, 500) from None
        if record.listen == "" and not self.allow_remote:
            address = ListenAddress("127.0.0.1", 0)  # no listen given: loopback, not everywhere
        if not address.loopback and not self.allow_remote:
            raise ApiError(refused_remote(address), 500)
        record.starts += 1
        try:
            record.listen = await self.runner.start(record, address, self._log(record.name))
        except OSError as err:
            raise ApiError(bind_error(address, err), 500) from None
        record.enabled = True

    async def _stop(self, record: ProxyRecord) -> None:
        if record.enabled:
            await self.runner.stop(record)
        record.enabled = False

    def _differs(self, current: ProxyRecord, listen: str, upstream: str) -> bool:
        """Toxiproxy's ``Differs``: the new listen, resolved, against the current one."""
        try:
            resolved = resolve_listen(listen)
        except AddressError as err:
            raise ApiError(err.text, 500) from None
        return current.listen != resolved.shown or current.upstream != upstream

    def _sources(self) -> list[Source]:
        return [
            Source(name, record.listen, record.upstream, self._log(name))
            for name, record in sorted(self.proxies.items())
        ]

    # -- Toxiproxy's endpoints --------------------------------------------------------------
    async def version(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        return Reply(200, "version", text=f'{{"version": "{VERSION}"}}\n')

    async def proxy_index(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        shown = {name: self.proxies[name].as_json() for name in sorted(self.proxies)}
        return Reply(200, "json", shown)

    async def proxy_create(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = read_proxy(request.body)
        if record.name in self.proxies:
            raise ApiError("proxy already exists", 409)
        if record.enabled:
            record.enabled = False
            await self._start(record)
        self.proxies[record.name] = record
        return Reply(CREATED, "json", record.as_json())

    async def proxy_show(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        return Reply(200, "json", self._proxy(params).as_json())

    async def proxy_update(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        current = self._proxy(params)
        wanted = read_update(request.body, current)
        if self._differs(current, wanted.listen, wanted.upstream):
            await self._stop(current)
            current.listen, current.upstream = wanted.listen, wanted.upstream
        current.framing, current.payload = wanted.framing, wanted.payload
        if wanted.enabled != current.enabled:
            if wanted.enabled:
                await self._start(current)
            else:
                await self._stop(current)
        return Reply(200, "json", current.as_json())

    async def proxy_delete(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        await self._stop(record)
        del self.proxies[record.name]
        self.logs.pop(record.name, None)
        return Reply(204, "empty")

    async def toxic_index(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        return Reply(200, "json", [t.as_json() for t in record.ordered_toxics()])

    async def toxic_create(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        toxic = new_toxic(record, request.body)
        record.toxics.append(toxic)
        self.runner.apply(record)
        return Reply(200, "json", toxic.as_json())

    def _toxic_index(self, record: ProxyRecord, params: dict[str, str]) -> int:
        for index, toxic in enumerate(record.toxics):
            if toxic.name == params["toxic"]:
                return index
        raise ApiError("toxic not found", 404)

    async def toxic_show(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        return Reply(200, "json", record.toxics[self._toxic_index(record, params)].as_json())

    async def toxic_update(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        index = self._toxic_index(record, params)
        toxic = updated_toxic(record, record.toxics[index], request.body)
        record.toxics[index] = toxic
        self.runner.apply(record)
        return Reply(200, "json", toxic.as_json())

    async def toxic_delete(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        del record.toxics[self._toxic_index(record, params)]
        self.runner.apply(record)
        return Reply(204, "empty")

    async def populate(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        try:
            wanted = read_populate(request.body)
        except ApiError as err:
            return Reply(err.status, "populate", {**err.body(), "proxies": None})
        done: list[ProxyRecord] = []
        try:
            for record in wanted:
                done.append(await self._add_or_replace(record))
        except ApiError as err:
            shown = [r.as_json() for r in done] or None
            return Reply(err.status, "populate", {**err.body(), "proxies": shown})
        return Reply(CREATED, "populate", {"proxies": [r.as_json() for r in done] or None})

    async def _add_or_replace(self, record: ProxyRecord) -> ProxyRecord:
        existing = self.proxies.get(record.name)
        if existing is not None:
            if not self._differs(existing, record.listen, record.upstream):
                if record.toxics_given:  # tearline: an entry that lists toxics sets them
                    existing.toxics = record.toxics
                    self.runner.apply(existing)
                return existing  # untouched otherwise: its toxics and enabled state stay
            await self._stop(existing)
        if record.enabled:
            record.enabled = False
            await self._start(record)  # on failure the old one stays, stopped
        self.proxies[record.name] = record
        return record

    async def reset(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        for name in sorted(self.proxies):
            record = self.proxies[name]
            if not record.enabled:
                await self._start(record)
            record.toxics.clear()
            self.runner.apply(record)
        return Reply(204, "empty")

    # -- tearline's endpoints ---------------------------------------------------------------
    async def metrics(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        return Reply(200, "text", text=exposition(self.registry), content_type=CONTENT_TYPE)

    async def events(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        shown: list[Any] = []
        for name in sorted(self.proxies):
            shown += [{"proxy": name, **r.as_json()} for r in self._log(name).records()]
        return Reply(200, "json", shown)

    async def proxy_events(self, request: ApiRequest, params: dict[str, str]) -> Reply:
        record = self._proxy(params)
        return Reply(200, "json", [r.as_json() for r in self._log(record.name).records()])
