"""The reference MCP server's core: HTTP requests (as values) in, replies (as values) out.

One tool, ``work``: it sends one ``notifications/progress`` per step (when the call names a
progress token) and answers ``{"content": [{"type": "text", "text": "done <steps>"}]}``. Every
call is counted (``executions``), so a harness can tell a tool that ran twice.

- POST ``initialize``: a new session, its id in ``Mcp-Session-Id``.
- POST with only notifications or responses: 202.
- POST with requests: one JSON body, or an SSE stream (``ServerSettings.answer``) whose events
  the session logs: a priming event first (2025-11-25), the progress notifications, the
  response.
- GET with ``Last-Event-ID``: the events of that stream after it; GET without: 405 (no
  stream for server-initiated messages).
- DELETE: the session ends.
- No session id after initialization: 400; an unknown or ended one: 404; a wrong
  ``MCP-Protocol-Version``: 400.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from reference_impl.framing.http1 import Received
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.errors import McpError
from reference_impl.mcp.jsonrpc import ErrorResponse, Notification, Request, Response
from reference_impl.mcp.settings import (
    SESSION_HEADER,
    VERSION_HEADER,
    ServerSettings,
    allows_batches,
    primes_streams,
    sends_version_header,
)
from reference_impl.mcp.streams import EventLog, SseEvent

TOOL = "work"
TOOL_SCHEMA = {
    "type": "object",
    "properties": {"steps": {"type": "integer", "minimum": 0, "maximum": 100}},
}
SERVER_INFO = {"name": "tearline-reference", "version": "1"}
MAX_STEPS = 100


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server answers. ``events`` set: an SSE stream, which ends properly when
    ``complete`` (else the server closes the connection after the last event)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    events: tuple[SseEvent, ...] | None = None
    complete: bool = True

    @property
    def streamed(self) -> bool:
        return self.events is not None


@dataclass(slots=True)
class Session:
    id: str
    log: EventLog = field(default_factory=EventLog)
    initialized: bool = False


@dataclass(slots=True)
class McpServer:
    settings: ServerSettings = field(default_factory=ServerSettings)
    sessions: dict[str, Session] = field(default_factory=dict)
    #: tool name -> how many times it ran, over all sessions
    executions: Counter[str] = field(default_factory=Counter)
    #: sessions ever made (ids are their numbers: deterministic, unlike a real server's)
    made: int = 0

    def handle(self, request: Received) -> Reply:
        """The reply to one HTTP request (any path: the shell routes)."""
        if request.method == "POST":
            return self._post(request)
        session, refused = self._session(request)
        if refused is not None:
            return refused
        assert session is not None
        if request.method == "GET":
            return self._get(session, request.headers.get("last-event-id"))
        if request.method == "DELETE":
            del self.sessions[session.id]
            return Reply(200)
        return _refuse(405, "method not allowed", allow="GET, POST, DELETE")

    def _post(self, request: Received) -> Reply:
        accept = request.headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return _refuse(406, "Accept must name application/json and text/event-stream")
        try:
            messages = jsonrpc.decode(request.body, batches=allows_batches(self.settings.version))
        except McpError as err:
            return _refuse(400, err.detail, code=jsonrpc.PARSE_ERROR)
        if any(isinstance(m, Request) and m.method == "initialize" for m in messages):
            return self._initialize(messages)
        session, refused = self._session(request)
        if refused is not None:
            return refused
        assert session is not None
        requests = [m for m in messages if isinstance(m, Request)]
        for message in messages:
            if isinstance(message, Notification) and message.method == "notifications/initialized":
                session.initialized = True
                if self.settings.mode == "forget-session":
                    del self.sessions[session.id]
        if not requests:
            return Reply(202)
        return self._answer(session, requests)

    def _initialize(self, messages: list[jsonrpc.Message]) -> Reply:
        if len(messages) != 1 or not isinstance(messages[0], Request):
            return _refuse(400, "initialize must be sent alone", code=jsonrpc.INVALID_REQUEST)
        self.made += 1
        session = Session(str(self.made))
        self.sessions[session.id] = session
        result = {
            "protocolVersion": self.settings.version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
        }
        reply = self._answer(session, [], [Response(messages[0].id, result)])
        return Reply(
            reply.status,
            (*reply.headers, ("Mcp-Session-Id", session.id)),
            reply.body,
            reply.events,
            reply.complete,
        )

    def _session(self, request: Received) -> tuple[Session | None, Reply | None]:
        given = request.headers.get(SESSION_HEADER)
        if given is None:
            return None, _refuse(400, "no Mcp-Session-Id", code=jsonrpc.INVALID_REQUEST)
        session = self.sessions.get(given)
        if session is None:
            return None, _refuse(404, f"no session {given}", code=-32001)
        version = request.headers.get(VERSION_HEADER)
        wanted = sends_version_header(self.settings.version)
        if wanted and version is not None and version != self.settings.version:
            return None, _refuse(400, f"protocol version {version} is not {self.settings.version}")
        return session, None

    def _answer(
        self,
        session: Session,
        requests: list[Request],
        answers: list[jsonrpc.Answer] | None = None,
    ) -> Reply:
        """The answers to ``requests`` (or ``answers`` given), as JSON or as a logged stream."""
        notes: list[Notification] = []
        answers = list(answers or [])
        for request in requests:
            progress, answer = self._call(request)
            notes += progress
            answers.append(answer)
        if self.settings.mode == "lose-final-response" and any(
            r.method == "tools/call" for r in requests
        ):
            answers = []
        if self.settings.answer == "json" and not notes:
            body = jsonrpc.encode(answers[0] if len(answers) == 1 else list(answers))
            return Reply(200, (("Content-Type", "application/json"),), body)
        calls = any(r.method == "tools/call" for r in requests)
        return self._stream(session, [*notes, *answers], calls)

    def _stream(self, session: Session, messages: list[jsonrpc.Message], calls: bool) -> Reply:
        stream = session.log.open()
        if primes_streams(self.settings.version):
            session.log.append(stream, b"", self.settings.retry_ms)
        for message in messages:
            session.log.append(stream, jsonrpc.encode(message))
        events = tuple(session.log.streams[stream - 1])
        cut, complete = self.settings.close_after_events, True
        if calls and cut is not None and cut < len(events):
            events, complete = events[:cut], False
        return Reply(
            200, (("Content-Type", "text/event-stream"),), events=events, complete=complete
        )

    def _get(self, session: Session, last_event_id: str | None) -> Reply:
        if last_event_id is None:
            return _refuse(405, "no stream for server-initiated messages", allow="POST, DELETE")
        try:
            stream, events = session.log.after(last_event_id)
        except McpError as err:
            return _refuse(400, err.detail)
        mode = self.settings.mode
        if mode == "duplicate-on-replay":
            events = [e for e in session.log.streams[stream - 1] if e.id == last_event_id] + events
        elif mode == "drop-on-replay":
            events = events[1:]
        elif mode == "replay-other-streams":
            others = [e for n, s in enumerate(session.log.streams, 1) if n != stream for e in s]
            events = [*events, *(e for e in others if not e.priming)]
        headers = (("Content-Type", "text/event-stream"),)
        return Reply(200, headers, events=tuple(events))

    def _call(self, request: Request) -> tuple[list[Notification], jsonrpc.Answer]:
        """Run one request: its progress notifications and its answer."""
        if request.method == "ping":
            return [], Response(request.id, {})
        if request.method == "tools/list":
            tool = {"name": TOOL, "description": "counts steps", "inputSchema": TOOL_SCHEMA}
            return [], Response(request.id, {"tools": [tool]})
        if request.method != "tools/call":
            return [], ErrorResponse(request.id, jsonrpc.METHOD_NOT_FOUND, request.method)
        name, arguments = request.params.get("name"), request.params.get("arguments", {})
        steps = arguments.get("steps", 0) if isinstance(arguments, dict) else None
        if name != TOOL or not isinstance(steps, int) or not 0 <= steps <= MAX_STEPS:
            return [], ErrorResponse(request.id, jsonrpc.INVALID_PARAMS, f"no tool call {name!r}")
        self.executions[TOOL] += 1
        meta = request.params.get("_meta", {})
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        notes = [
            Notification(
                "notifications/progress",
                {"progressToken": token, "progress": step, "total": steps},
            )
            for step in range(1, steps + 1)
            if token is not None
        ]
        text = {"type": "text", "text": f"done {steps}"}
        return notes, Response(request.id, {"content": [text], "isError": False})


def _refuse(status: int, message: str, *, code: int = -32000, allow: str | None = None) -> Reply:
    """An error status with a JSON-RPC error body (no id: it answers no request in particular)."""
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    if allow is not None:
        headers += (("Allow", allow),)
    return Reply(status, headers, jsonrpc.encode(ErrorResponse(None, code, message)))
