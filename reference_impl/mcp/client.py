"""The reference MCP client's core: the requests of a session as bytes, and what to do next.

``ClientCore`` holds the session (its id, the version, the next request id, the checker) and
makes each exchange's request. ``Call`` follows one JSON-RPC request across the exchanges it
takes: it reads the items of each answer (``wire.Incoming``) and, once an answer is over, says
what comes next (``next_step``): the request is answered (``Done``), its stream is to be resumed
from the last event id after ``retry`` (``Resume``), the session was lost (``SessionLost``: the
shell starts one new session and sends the request once more), or it failed with a typed error
(``Fail``). A call never waits for nothing: a stream that ended without its response and
cannot be resumed (no event id, or no resumes left) is ``STREAM_CUT``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl.framing.request import Request as HttpRequest
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.checker import SessionChecker
from reference_impl.mcp.errors import McpErrorCode
from reference_impl.mcp.settings import (
    DEFAULT_RETRY_MS,
    MCP_PATH,
    SESSION_HEADER,
    SPEC_VERSIONS,
    SpecVersion,
    allows_batches,
    sends_version_header,
)
from reference_impl.mcp.streams import parse_event_id
from reference_impl.mcp.wire import ClientExchange, Delivered, Ended, Failed, Head, Incoming, Primed

CLIENT_INFO = {"name": "tearline-reference-client", "version": "1"}
#: resumes of one request's stream before the client gives up on it
MAX_RESUMES = 2


@dataclass(frozen=True, slots=True)
class Done:
    answer: jsonrpc.Answer


@dataclass(frozen=True, slots=True)
class Resume:
    last_event_id: str
    wait_ms: int


@dataclass(frozen=True, slots=True)
class SessionLost:
    pass


@dataclass(frozen=True, slots=True)
class Fail:
    code: McpErrorCode
    detail: str


Step = Done | Resume | SessionLost | Fail


@dataclass(slots=True)
class ClientCore:
    version: SpecVersion
    authority: str
    path: str = MCP_PATH
    session_id: str | None = None
    checker: SessionChecker = field(default_factory=SessionChecker)
    #: sessions this client started (a lost one is replaced once per request)
    sessions: int = 0
    _next_id: int = 0
    _initialized: bool = False

    def request(self, method: str, params: jsonrpc.Params | None = None) -> jsonrpc.Request:
        """A request with the session's next id, recorded by the checker."""
        self._next_id += 1
        request = jsonrpc.Request(self._next_id, method, dict(params or {}))
        self.checker.request(request)
        return request

    def initialize(self) -> jsonrpc.Request:
        """A new session's first request (the session id is forgotten until it answers)."""
        self.session_id, self._initialized = None, False
        self.sessions += 1
        self.checker.new_session()
        params = {
            "protocolVersion": self.version,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        return self.request("initialize", params)

    def initialized(self) -> jsonrpc.Notification:
        self._initialized = True
        return jsonrpc.Notification("notifications/initialized")

    def call_tool(self, name: str, arguments: jsonrpc.Params) -> jsonrpc.Request:
        """A ``tools/call`` with a progress token (its id), so progress comes first."""
        token = self._next_id + 1  # the request's own id: unique in the session
        meta = {"progressToken": token}
        return self.request(
            "tools/call", {"name": name, "arguments": dict(arguments), "_meta": meta}
        )

    def post(
        self, message: jsonrpc.Message | list[jsonrpc.Message]
    ) -> tuple[ClientExchange, bytes]:
        headers = [("Content-Type", "application/json"), *self._session_headers()]
        body = jsonrpc.encode(message)
        return self._exchange(HttpRequest("POST", self.path, tuple(headers), body), "POST")

    def resume(self, last_event_id: str) -> tuple[ClientExchange, bytes]:
        headers = [*self._session_headers(), ("Last-Event-ID", last_event_id)]
        return self._exchange(HttpRequest("GET", self.path, tuple(headers)), "GET")

    def delete(self) -> tuple[ClientExchange, bytes]:
        return self._exchange(HttpRequest("DELETE", self.path, self._session_headers()), "DELETE")

    def _session_headers(self) -> tuple[tuple[str, str], ...]:
        headers: list[tuple[str, str]] = []
        if self.session_id is not None:
            headers.append(("Mcp-Session-Id", self.session_id))
        if self._initialized and sends_version_header(self.version):
            headers.append(("MCP-Protocol-Version", self.version))
        return tuple(headers)

    def _exchange(self, request: HttpRequest, method: str) -> tuple[ClientExchange, bytes]:
        exchange = ClientExchange(batches=allows_batches(self.version))
        request = HttpRequest(
            request.method, request.path, request.headers, request.body, self.authority
        )
        return exchange, exchange.request(request, method)


@dataclass(slots=True)
class Call:
    """One request, across the exchanges it takes."""

    core: ClientCore
    request: jsonrpc.Request
    max_resumes: int = MAX_RESUMES
    answer: jsonrpc.Answer | None = None
    #: the progress notifications that came for it, in order
    progress: list[jsonrpc.Notification] = field(default_factory=list)
    last_event_id: str = ""
    retry_ms: int | None = None
    resumes: int = 0
    #: the stream being resumed (its number, from the event id), None on the first answer
    stream: int | None = None
    _status: int | None = None
    _ended: Ended | None = None
    _failed: Failed | None = None

    def take(self, items: list[Incoming]) -> None:
        """The items of the current answer, as they arrive."""
        for item in items:
            if isinstance(item, Head):
                self._head(item)
            elif isinstance(item, Primed):
                self.core.checker.primed(item.event_id, self.stream)
                self.last_event_id, self.retry_ms = item.event_id, item.retry_ms
            elif isinstance(item, Delivered):
                self._delivered(item)
            elif isinstance(item, Ended):
                self._ended = item
            else:
                self._failed = item

    def next_step(self) -> Step:
        """Once the answer is over: what comes next (and the exchange state is reset)."""
        ended, failed, status = self._ended, self._failed, self._status
        self._ended = self._failed = self._status = None
        if self.answer is not None:
            return self._answered(self.answer)
        if failed is not None:
            return self._give_up(failed.error.code, failed.error.detail)
        if status == 404 and self.core.session_id is not None:
            self.core.checker.gave_up(self.request.id)
            return SessionLost()
        if status is not None and status // 100 != 2:
            detail = ended.error.message if ended is not None and ended.error else ""
            return self._give_up(McpErrorCode.HTTP_STATUS, f"status {status}: {detail}")
        if self.last_event_id and self.resumes < self.max_resumes:
            self.resumes += 1
            place = parse_event_id(self.last_event_id)
            self.stream = None if place is None else place[0]
            wait = DEFAULT_RETRY_MS if self.retry_ms is None else self.retry_ms
            return Resume(self.last_event_id, wait)
        how = "cleanly" if ended is not None and ended.clean else "by a cut"
        return self._give_up(
            McpErrorCode.STREAM_CUT, f"the stream ended {how} without the response"
        )

    def _answered(self, answer: jsonrpc.Answer) -> Step:
        """Done; an initialize answer also sets the version the session speaks, which must
        be one the client knows (the server answers with its own when it has not the one
        asked for)."""
        if self.request.method == "initialize" and isinstance(answer, jsonrpc.Response):
            version = answer.result.get("protocolVersion")
            if version not in SPEC_VERSIONS:
                # answered (the checker counted it), yet no session the client can speak
                return Fail(McpErrorCode.BAD_MESSAGE, f"unknown protocol version {version!r}")
            self.core.version = version
        return Done(answer)

    def _head(self, head: Head) -> None:
        self._status = head.status
        if self.request.method == "initialize" and head.status == 200:
            self.core.session_id = head.headers.get(SESSION_HEADER)

    def _delivered(self, item: Delivered) -> None:
        message = item.message
        self.core.checker.received(message, item.event_id, self.stream)
        if item.event_id:
            self.last_event_id = item.event_id
        if isinstance(message, jsonrpc.Notification) and message.method == "notifications/progress":
            self.progress.append(message)
        elif (
            isinstance(message, jsonrpc.Response | jsonrpc.ErrorResponse)
            and message.id == self.request.id
            and self.answer is None
        ):
            self.answer = message

    def _give_up(self, code: McpErrorCode, detail: str) -> Fail:
        self.core.checker.gave_up(self.request.id)
        return Fail(code, detail)
