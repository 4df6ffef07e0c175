"""The control API over HTTP/1.1: httptools' parser on trio, one task per connection.

What Toxiproxy's clients see of Go's ``net/http`` is kept: keep-alive with no limit on the
requests a connection makes, a connection idle for 60 s closed, a request that takes more
than 15 s to arrive dropped, a ``Date`` header, header names in Go's canonical form and its
reason phrases, bodies up to 2048 bytes with a ``Content-Length`` and longer ones chunked
(``routes.render``), ``100 Continue`` for a client that
waits for it (curl does, for bodies over 1 KiB), and a malformed request answered 400 and the
connection closed (a head over 1 MiB: 431). A body is read as it arrives, up to where its
first JSON value ends or its bound is passed (``harness/control/bodies.py``); the rest is read
and dropped before the answer goes, so that a client still sending gets it.

Why not an ASGI server: Hypercorn's trio worker spent 1.6-1.9 ms of CPU on each request on
this 2-core machine under load (a bare ASGI app: 1.6-1.7), and kept a connection that closed
before its first request in CLOSE-WAIT until its keep-alive wait ended. Why httptools (llhttp,
Node's parser, in C) rather than h11: a ``GET /version`` cost this server 0.17 ms of CPU with
h11, of which a bare trio loop answering canned bytes needs 0.045 (Go's whole server: 0.045);
h11's events, state machine and header validation were most of the rest, and a test suite's
setup and teardown are a few thousand requests. The answer is written here, as Go frames it.
"""

from __future__ import annotations

import contextlib
import email.utils
import http
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import unquote

import httptools
import trio

from harness.control.addresses import join_host_port
from harness.control.api import ApiRequest, ControlApi
from harness.control.bodies import MAX_BODY_BYTES, FirstValue
from harness.control.routes import Wire

#: Go's http.Server as Toxiproxy sets it up: read 15 s, idle 60 s
READ_TIMEOUT_S = 15.0
KEEP_ALIVE_S = 60.0
#: the most a request's head may be (Go's default ``MaxHeaderBytes``: 1 MiB)
MAX_HEAD_BYTES = 1 << 20
READ_BYTES = 65536
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: the request headers the API reads (the framing ones are the parser's)
_READ_HEADERS = frozenset({b"user-agent", b"expect"})

Log = Callable[[str], None]


async def serve_api(
    api: ControlApi,
    host: str,
    port: int,
    shutdown: Callable[[], Awaitable[None]],
    *,
    log: Log = lambda note: None,
    max_body: int = MAX_BODY_BYTES,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``api`` on ``host:port`` until ``shutdown`` returns; started: the addresses bound
    (``http://127.0.0.1:8474``; ``bound_port`` reads them). Raises OSError when it cannot
    listen."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    handler = partial(_connection, api=api, max_body=max_body, log=log)
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started([f"http://{join_host_port(host, bound)}"])
        await shutdown()
        nursery.cancel_scope.cancel()


def bound_port(binds: list[str]) -> int:
    return int(binds[0].rsplit(":", 1)[1])


async def _connection(
    stream: trio.SocketStream, *, api: ControlApi, max_body: int, log: Log
) -> None:
    reader = _Reader(stream)
    # One cancel scope for the connection, whose deadline is that of the wait in hand (idle,
    # or reading a request): past it the connection ends. (A scope per wait cost three a
    # request, 5 us each.)
    with trio.CancelScope() as bound:
        try:
            while True:
                bound.deadline = trio.current_time() + KEEP_ALIVE_S
                if not await reader.started():
                    return  # the client is gone
                bound.deadline = trio.current_time() + READ_TIMEOUT_S
                head = await reader.head()
                body = FirstValue(max_body)
                if head.expects_continue and not reader.has_end():
                    await stream.send_all(CONTINUE)
                while (piece := await reader.body()) is not None:
                    if body.feed(piece):
                        break
                bound.deadline = math.inf
                wire = await api.handle(_asked(head, body))
                bound.deadline = trio.current_time() + READ_TIMEOUT_S
                while await reader.body() is not None:
                    pass  # the rest, dropped (Go's server reads it too, to keep the connection)
                bound.deadline = math.inf
                await stream.send_all(_answer(head, wire, reader.keep_alive))
                if not reader.keep_alive:
                    return
        except _MalformedError as err:
            await _refuse(stream, err.status)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away: nothing to answer
        except Exception as err:  # a bug: one line, and the server goes on
            log(f"api: connection error: {type(err).__name__}: {err}")


class _MalformedError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass(slots=True)
class _Head:
    method: str
    target: bytes
    headers: list[tuple[bytes, bytes]]
    http_1_0: bool

    @property
    def expects_continue(self) -> bool:
        return not self.http_1_0 and any(
            name == b"expect" and value.lower() == b"100-continue" for name, value in self.headers
        )


@dataclass(slots=True)
class _End:
    keep_alive: bool


_Event = _Head | bytes | _End | _MalformedError


@dataclass(slots=True)
class _Parsed:
    """httptools' callbacks, as the queue of what a connection's bytes held so far (a client
    may send its next request before it has the answer to this one)."""

    parser: httptools.HttpRequestParser = field(init=False)
    events: deque[_Event] = field(default_factory=deque)
    target: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    #: a request has begun whose head is not complete yet, and how much of it came
    in_head: bool = False
    head_bytes: int = 0
    #: what came after a malformed request is not looked at
    broken: bool = False

    def __post_init__(self) -> None:
        self.parser = httptools.HttpRequestParser(self)

    def feed(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.broken = True  # answered, then closed: this API upgrades to nothing
            if not self.events or not isinstance(self.events[-1], _End):
                self.events.append(_End(keep_alive=False))
        except httptools.HttpParserError:
            self._break(400)
            return
        if self.in_head:
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD_BYTES:
                self._break(431)

    def _break(self, status: int) -> None:
        self.broken = True
        self.events.append(_MalformedError(status))

    # -- httptools' callbacks ---------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.target, self.headers, self.in_head, self.head_bytes = b"", [], True, 0

    def on_url(self, url: bytes) -> None:
        self.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in _READ_HEADERS:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.in_head = False
        parser = self.parser
        method = parser.get_method().decode("ascii")
        head = _Head(method, self.target, self.headers, parser.get_http_version() == "1.0")
        self.events.append(head)

    def on_body(self, body: bytes) -> None:
        self.events.append(bytes(body))

    def on_message_complete(self) -> None:
        self.events.append(_End(self.parser.should_keep_alive()))


class _Reader:
    """The requests of one connection, read as they are needed."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.parsed = _Parsed()
        #: the request's end was read, and whether another may follow it
        self.ended = False
        self.keep_alive = True

    async def _next(self) -> _Event:
        parsed = self.parsed
        while not parsed.events:
            data = await self.stream.receive_some(READ_BYTES)
            if not data:  # the client closed in the middle of a request
                raise trio.BrokenResourceError("the request ended early")
            parsed.feed(data)
        event = parsed.events.popleft()
        if isinstance(event, _MalformedError):
            raise event
        return event

    async def started(self) -> bool:
        """Wait for the next request's first bytes; False when the connection ended."""
        parsed = self.parsed
        while not parsed.events and not parsed.in_head:
            data = await self.stream.receive_some(READ_BYTES)
            if not data:
                return False
            parsed.feed(data)
        return True

    async def head(self) -> _Head:
        event = await self._next()
        if not isinstance(event, _Head):  # (the parser gives a head before anything else)
            raise _MalformedError(400)
        self.ended = False
        return event

    def has_end(self) -> bool:
        """Whether the whole request is here already (no ``100 Continue`` to send)."""
        return any(isinstance(event, _End) for event in self.parsed.events)

    async def body(self) -> bytes | None:
        """The next piece of the request's body; None at its end (and ``keep_alive`` says
        whether another request may follow)."""
        if self.ended:
            return None
        event = await self._next()
        if isinstance(event, _End):
            self.keep_alive, self.ended = event.keep_alive, True
            return None
        if isinstance(event, bytes):
            return event
        raise _MalformedError(400)  # (a head before this request's end: never from the parser)


def _asked(head: _Head, body: FirstValue) -> ApiRequest:
    target = head.target.decode("latin-1")
    path, _, query = target.partition("?")
    agent = b""
    for name, value in head.headers:
        if name == b"user-agent":
            agent = value
            break
    return ApiRequest(
        head.method,
        unquote(path),
        body.body,
        agent.decode("latin-1"),
        query,
        body.too_large,
    )


_REASONS = {status.value: status.phrase for status in http.HTTPStatus}


def _answer(head: _Head, wire: Wire, keep_alive: bool) -> bytes:
    """The answer's bytes: Go's headers (sorted, then Date and the framing), its reason."""
    status = wire.status
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}"]
    lines += [f"{name}: {value}" for name, value in wire.headers]
    lines.append(f"Date: {_date()}")
    chunked = wire.chunked and not head.http_1_0  # (HTTP/1.0 has no chunks)
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    elif status not in (204, 304):  # (a HEAD too)
        lines.append(f"Content-Length: {len(wire.body)}")
    if not keep_alive:
        lines.append("Connection: close")
    out = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    if not wire.body or head.method == "HEAD":
        return out
    if chunked:
        return b"%s%x\r\n%s\r\n0\r\n\r\n" % (out, len(wire.body), wire.body)
    return out + wire.body


_DATE: list[tuple[int, str]] = [(0, "")]


def _date() -> str:
    """``Date`` as Go writes it, made once a second."""
    now = int(time.time())
    if _DATE[0][0] != now:
        _DATE[0] = (now, email.utils.formatdate(now, usegmt=True))
    return _DATE[0][1]


async def _refuse(stream: trio.SocketStream, status: int) -> None:
    """A malformed request: Go's plain 400 (or 431 for a head too long), then the close."""
    reason = _REASONS[status]
    body = f"{status} {reason}"
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_all((head + body).encode())
