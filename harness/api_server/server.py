"""The control API over HTTP/1.1: h11 on trio, one task per connection.

What Toxiproxy's clients see of Go's ``net/http`` is kept: keep-alive with no limit on the
requests a connection makes, a connection idle for 60 s closed, a request that takes more
than 15 s to arrive dropped, a ``Date`` header, header names in Go's canonical form and its
reason phrases, bodies up to 2048 bytes with a ``Content-Length`` and longer ones chunked
(``routes.render``), ``100 Continue`` for a client that
waits for it (curl does, for bodies over 1 KiB), and a malformed request answered 400 and the
connection closed. A body is read as it arrives, up to where its first JSON value ends or its
bound is passed (``harness/control/bodies.py``); the rest is read and dropped before the
answer goes, so that a client still sending gets it.

Why not an ASGI server: Hypercorn's trio worker spent 1.6-1.9 ms of CPU on each request on
this 2-core machine under load (a bare ASGI app: 1.6-1.7), this loop 0.4 ms, and a test
suite's setup and teardown are a few thousand requests; and Hypercorn kept a connection that
closed before its first request in CLOSE-WAIT until its keep-alive wait ended.
"""

from __future__ import annotations

import email.utils
import http
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from urllib.parse import unquote

import h11
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
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    reader = _Reader(stream, connection)
    try:
        while True:
            with trio.move_on_after(KEEP_ALIVE_S):
                started = await reader.started()
            if not started:
                return  # idle too long, or the client is gone
            with trio.fail_after(READ_TIMEOUT_S):
                request = await reader.request()
                body = FirstValue(max_body)
                pieces = reader.body()
                async for piece in pieces:
                    if body.feed(piece):
                        break
            wire = await api.handle(_asked(request, body))
            with trio.fail_after(READ_TIMEOUT_S):
                async for _ in pieces:
                    pass  # the rest, dropped (Go's server reads it too, to keep the connection)
            await stream.send_all(_answer(connection, request, wire))
            if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                return
            connection.start_next_cycle()
    except h11.RemoteProtocolError as err:
        await _refuse(stream, connection, err.error_status_hint)
    except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
        pass  # the client went away, or took too long: nothing to answer
    except Exception as err:  # a bug: one line, and the server goes on
        log(f"api: connection error: {type(err).__name__}: {err}")


class _Reader:
    """The requests of one connection as h11 events, read as they are needed."""

    def __init__(self, stream: trio.SocketStream, connection: h11.Connection) -> None:
        self.stream, self.connection = stream, connection

    async def _next(self) -> h11.Event | type[h11.PAUSED]:
        while True:
            event = self.connection.next_event()
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]  # (h11 types NEED_DATA apart)
            if self.connection.they_are_waiting_for_100_continue:
                answer = h11.InformationalResponse(status_code=100, headers=[])
                await self.stream.send_all(self.connection.send(answer) or b"")
            self.connection.receive_data(await self.stream.receive_some(READ_BYTES))

    async def started(self) -> bool:
        """Wait for the next request's first bytes; False when the connection ended."""
        connection = self.connection
        while not connection.trailing_data[0]:
            if connection.trailing_data[1]:
                return False
            data = await self.stream.receive_some(READ_BYTES)
            connection.receive_data(data)
            if not data:
                return False
        return True

    async def request(self) -> h11.Request:
        event = await self._next()
        if not isinstance(event, h11.Request):
            raise h11.RemoteProtocolError("no request", error_status_hint=400)
        return event

    async def body(self) -> AsyncIterator[bytes]:
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
            else:  # the client closed in the middle of its body
                raise trio.BrokenResourceError("the request ended early")


def _asked(request: h11.Request, body: FirstValue) -> ApiRequest:
    target = request.target.decode("latin-1")
    path, _, query = target.partition("?")
    agent = next((v for k, v in request.headers if k == b"user-agent"), b"")
    return ApiRequest(
        request.method.decode("ascii"),
        unquote(path),
        body.body,
        agent.decode("latin-1"),
        query,
        body.too_large,
    )


def _answer(connection: h11.Connection, request: h11.Request, wire: Wire) -> bytes:
    """The answer's bytes: Go's headers (sorted, then Date and the framing), its reason."""
    headers = [(name, value) for name, value in wire.headers]
    headers.append(("Date", _date()))
    head_only = request.method == b"HEAD"
    if wire.chunked:
        headers.append(("Transfer-Encoding", "chunked"))
    elif wire.status not in (204, 304):  # (a HEAD too: h11 would make it chunked)
        headers.append(("Content-Length", str(len(wire.body))))
    reason = http.HTTPStatus(wire.status).phrase.encode()
    out = connection.send(h11.Response(status_code=wire.status, headers=headers, reason=reason))
    if wire.body and not head_only:
        out = (out or b"") + (connection.send(h11.Data(data=wire.body)) or b"")
    return (out or b"") + (connection.send(h11.EndOfMessage()) or b"")


_DATE: list[tuple[int, str]] = [(0, "")]


def _date() -> str:
    """``Date`` as Go writes it, made once a second."""
    now = int(time.time())
    if _DATE[0][0] != now:
        _DATE[0] = (now, email.utils.formatdate(now, usegmt=True))
    return _DATE[0][1]


async def _refuse(stream: trio.SocketStream, connection: h11.Connection, status: int) -> None:
    """A malformed request: Go's plain 400 (or h11's status for it), then the close."""
    if connection.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    reason = http.HTTPStatus(status).phrase
    body = f"{status} {reason}".encode()
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Connection", "close"),
        ("Content-Length", str(len(body))),
    ]
    try:
        response = h11.Response(status_code=status, headers=headers, reason=reason.encode())
        data = connection.send(response) or b""
        data += (connection.send(h11.Data(data=body)) or b"") + (
            connection.send(h11.EndOfMessage()) or b""
        )
        await stream.send_all(data)
    except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
