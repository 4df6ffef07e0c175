"""MCP's HTTP exchanges as bytes, on h11 and the HTTP/1.1 pieces the SSE framing uses.

One exchange is one connection: one request, one reply, then the server closes (so that every
exchange of a session is a connection of its own to the fault proxy).

- Server (``ServerExchange``): bytes of the request in, the request once whole
  (``http1.RequestReader``); a ``Reply`` out as pieces to write in order (the head, one piece
  per event, the body's end when the reply is complete), so that a shell may pace events.
- Client (``ClientExchange``): the request's bytes (``http1.request_bytes``); the answer's bytes
  in, ``Incoming`` items out: its head, each JSON-RPC message with the id of the event that
  carried it, each priming event, and how the answer ended. What an answer holds does not depend
  on how its bytes were split: the same items come out of any split (``tests/mcp``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import h11

from reference_impl import defaults
from reference_impl.errors import CodecError
from reference_impl.events import Message
from reference_impl.framing.http1 import Received, RequestReader, refusal_bytes, request_bytes
from reference_impl.framing.request import Refusal, Request
from reference_impl.framing.sse_parser import EventStreamParser
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.errors import McpError, McpErrorCode
from reference_impl.mcp.server import Reply
from reference_impl.mcp.streams import frame

ACCEPT = "application/json, text/event-stream"
#: the largest event (or JSON body) the client reads
MAX_ANSWER_BYTES = defaults.MAX_MESSAGE_BYTES
_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found"}


class ServerExchange:
    """The server's side of one connection."""

    def __init__(self) -> None:
        self._conn = h11.Connection(h11.SERVER)
        self._reader = RequestReader(self._conn)

    def receive_data(self, data: bytes) -> Received | Refusal | None:
        """The request once whole, a refusal of one too large, else None.
        ``CodecError(PROTOCOL_ERROR)`` for bytes that are no HTTP/1.1 request."""
        return self._reader.feed(data)

    def refusal(self, refused: Refusal) -> bytes:
        return refusal_bytes(self._conn, refused)

    def pieces(self, reply: Reply) -> list[bytes]:
        """The reply's bytes, to be written in order: head (with body), then one per event,
        then the body's end unless the reply is cut on purpose."""
        headers = [*reply.headers, ("Connection", "close")]
        if not reply.streamed:
            headers.append(("Content-Length", str(len(reply.body))))
        else:
            headers += [("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked")]
        reason = _REASONS.get(reply.status, "Error")
        head = self._conn.send(
            h11.Response(status_code=reply.status, reason=reason, headers=headers)
        )
        if reply.events is None:
            body = self._conn.send(h11.Data(data=reply.body)) if reply.body else b""
            return [head + body + self._conn.send(h11.EndOfMessage())]
        pieces = [head] + [self._conn.send(h11.Data(data=frame(e))) for e in reply.events]
        if reply.complete:
            pieces.append(self._conn.send(h11.EndOfMessage()))
        return pieces


@dataclass(frozen=True, slots=True)
class Head:
    status: int
    #: lower-case name -> the first value
    headers: dict[str, str]

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


@dataclass(frozen=True, slots=True)
class Delivered:
    """A JSON-RPC message; ``event_id`` the id of the event that carried it ("" in JSON)."""

    message: jsonrpc.Message
    event_id: str = ""


@dataclass(frozen=True, slots=True)
class Primed:
    """An event with an id and no data: where to resume from, and how long to wait first."""

    event_id: str
    retry_ms: int | None


@dataclass(frozen=True, slots=True)
class Ended:
    """The answer is over. ``clean``: its body's own end arrived (else the connection closed
    first); ``error``: the body of an error status, when it was a JSON-RPC error."""

    clean: bool
    error: jsonrpc.ErrorResponse | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """The answer broke a rule; nothing more is read from it."""

    error: McpError


Incoming = Head | Delivered | Primed | Ended | Failed


class ClientExchange:
    """The client's side of one connection: the request, then its answer read."""

    def __init__(self, batches: bool = False) -> None:
        self._conn = h11.Connection(h11.CLIENT)
        self._batches = batches
        self._parser = EventStreamParser(MAX_ANSWER_BYTES)
        self._head: Head | None = None
        self._body = bytearray()
        self._done = False
        self._eof = False

    def request(self, request: Request, method: str) -> bytes:
        """The request's bytes (``Accept`` for both kinds of answer unless given)."""
        return request_bytes(self._conn, request, method, ACCEPT)

    @property
    def done(self) -> bool:
        return self._done

    def receive_data(self, data: bytes) -> list[Incoming]:
        if self._done or not data:
            return []
        self._conn.receive_data(data)
        return self._drain()

    def receive_eof(self) -> list[Incoming]:
        """The server closed: what the end makes of the answer."""
        if self._done:
            return []
        self._eof = True
        self._conn.receive_data(b"")
        items = self._drain()
        if not self._done:  # EOF before the body's end (or before the head)
            self._done = True
            items.append(Ended(clean=False))
        return items

    def _drain(self) -> list[Incoming]:
        items: list[Incoming] = []
        while not self._done:
            try:
                event = self._conn.next_event()
            except h11.RemoteProtocolError as exc:
                if self._eof:  # the connection closed inside the answer
                    self._done = True
                    items.append(Ended(clean=False))
                    return items
                return self._fail(items, McpErrorCode.BAD_ANSWER, f"HTTP: {exc}")
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return items
            if isinstance(event, h11.Response):
                self._head = Head(event.status_code, _headers(event.headers))
                items.append(self._head)
            elif isinstance(event, h11.Data):
                items += self._body_data(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                items += self._end()
            elif isinstance(event, h11.ConnectionClosed):
                self._done = True
                items.append(Ended(clean=False))
            if items and isinstance(items[-1], Failed):
                self._done = True
        return items

    def _body_data(self, data: bytes) -> list[Incoming]:
        assert self._head is not None
        if self._head.status // 100 == 2 and self._head.media_type == "text/event-stream":
            return self._events(data)
        self._body += data
        if len(self._body) > MAX_ANSWER_BYTES:
            return [Failed(McpError(McpErrorCode.BAD_ANSWER, "body too large"))]
        return []

    def _events(self, data: bytes) -> list[Incoming]:
        try:
            return self._deliver(self._parser.feed(data))
        except CodecError as err:  # the events before the bad byte still count
            whole = [m for m in err.events if isinstance(m, Message)]
            return [*self._deliver(whole), Failed(McpError(McpErrorCode.BAD_ANSWER, str(err)))]

    def _deliver(self, messages: list[Message]) -> list[Incoming]:
        items: list[Incoming] = []
        for message in messages:
            if not message.data:
                items.append(Primed(message.id, self._parser.retry_ms))
                continue
            try:
                (decoded,) = jsonrpc.decode(message.data)
            except McpError as err:
                return [*items, Failed(err)]
            items.append(Delivered(decoded, message.id))
        return items

    def _end(self) -> list[Incoming]:
        assert self._head is not None
        self._done = True
        head, body = self._head, bytes(self._body)
        if head.status // 100 != 2:
            return [Ended(clean=True, error=_error_body(body))]
        if head.media_type == "text/event-stream":
            return [Ended(clean=not self._parser.in_progress)]
        if head.status == 202 or (not body and head.media_type != "application/json"):
            return [Ended(clean=True)]
        if head.media_type != "application/json":
            failed = McpError(McpErrorCode.BAD_ANSWER, f"content type {head.media_type!r}")
            return [Failed(failed)]
        try:
            messages = jsonrpc.decode(body, batches=self._batches)
        except McpError as err:
            return [Failed(err)]
        return [*(Delivered(m) for m in messages), Ended(clean=True)]

    def _fail(self, items: list[Incoming], code: McpErrorCode, detail: str) -> list[Incoming]:
        self._done = True
        return [*items, Failed(McpError(code, detail))]


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in raw:
        out.setdefault(name.decode("ascii").lower(), value.decode("latin-1"))
    return out


def _error_body(body: bytes) -> jsonrpc.ErrorResponse | None:
    try:
        (message,) = jsonrpc.decode(body)
    except (McpError, ValueError):
        return None
    return message if isinstance(message, jsonrpc.ErrorResponse) else None
