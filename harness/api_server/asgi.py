"""The control API over HTTP: a Starlette app served by Hypercorn's trio worker.

Starlette reads the request and writes the answer ``ControlApi`` gives; one route takes every
path, because Toxiproxy's router answers unknown paths and methods its own way (``routes.py``).
The body is read as it arrives, up to where its first JSON value ends or its bound is passed
(``harness/control/bodies.py``); the rest is read and dropped after the answer is known.
Hypercorn adds the ``Date`` header and frames a body without a length as chunked, as Go does
for bodies over 2048 bytes. Hypercorn's log goes to one line per event: no traceback ever
reaches the console (a handler that fails answers 500 and the server goes on).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import cast
from urllib.parse import unquote

import hypercorn.trio.run
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.typing import ASGIFramework
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive

from harness.control.addresses import join_host_port
from harness.control.api import ApiRequest, ControlApi
from harness.control.bodies import MAX_BODY_BYTES, FirstValue

#: Go's http.Server: read 15 s, write 30 s, idle 60 s
KEEP_ALIVE_S = 60.0
#: every method reaches the API's own router (Toxiproxy answers 405 itself)
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"]


class _ClosingTcpServer(TCPServer):
    """Hypercorn's connection, closed as soon as its client has gone. Hypercorn 0.17-0.18
    closes a connection whose client left before sending a request (a port check, a readiness
    probe: Testcontainers polls so) only when its keep-alive wait ends, 60 s later, and holds
    its descriptor in CLOSE-WAIT until then; here the wait ends with the reading."""

    async def _read_data(self) -> None:
        await super()._read_data()
        await self.idle_task.stop()


hypercorn.trio.run.TCPServer = _ClosingTcpServer  # type: ignore[attr-defined]  # its worker's


def app_for(api: ControlApi, max_body: int = MAX_BODY_BYTES) -> Starlette:
    async def endpoint(request: Request) -> Response:
        raw = request.scope.get("raw_path") or request.scope["path"].encode()
        path = unquote(raw.decode("latin-1"))
        query = request.scope.get("query_string", b"").decode("latin-1")
        body = FirstValue(max_body)
        pieces = _pieces(request.receive)
        async for piece in pieces:
            if body.feed(piece):
                break
        agent = request.headers.get("user-agent", "")
        asked = ApiRequest(request.method, path, body.body, agent, query, body.too_large)
        wire = await api.handle(asked)
        async for _ in pieces:
            pass  # the rest, dropped: the client gets its answer once it has sent it all
        headers = dict(wire.headers)
        if wire.chunked:
            return StreamingResponse(_once(wire.body), wire.status, headers)
        return Response(wire.body, wire.status, headers)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=METHODS)])


async def _pieces(receive: Receive) -> AsyncIterator[bytes]:
    """The request body as it arrives (Starlette's ``stream`` cannot be left and taken up
    again)."""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return  # the client went away
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


class _OneLine(logging.Formatter):
    """``api: message: ExceptionType: text`` on one line, no traceback (the writer adds the
    program's prefix)."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            err = record.exc_info[1]
            text = f"{text}: {type(err).__name__}: {err}"
        return f"api: {text}"


def _error_log(write: Callable[[str], None]) -> logging.Logger:
    logger = logging.getLogger("tearline.control.api")
    logger.propagate = False
    logger.setLevel(logging.WARNING)  # not Hypercorn's "Running on ..." (we say it ourselves)

    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            write(self.format(record))

    handler = _Handler()
    handler.setFormatter(_OneLine())
    logger.handlers[:] = [handler]
    return logger


async def serve_api(
    api: ControlApi,
    host: str,
    port: int,
    shutdown: Callable[[], Awaitable[None]],
    *,
    log: Callable[[str], None] = lambda note: None,
    max_body: int = MAX_BODY_BYTES,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``api`` on ``host:port`` until ``shutdown`` returns; started: the addresses bound
    (``http://127.0.0.1:8474``; ``bound_port`` reads them). Raises OSError when it cannot
    listen."""
    config = Config()
    config.bind = [join_host_port(host, port)]
    config.accesslog = None
    config.errorlog = _error_log(log)
    config.include_server_header = False
    config.keep_alive_timeout = KEEP_ALIVE_S
    config.keep_alive_max_requests = sys.maxsize  # Go's server never closes a busy connection
    config.graceful_timeout = 1.0
    app = cast(ASGIFramework, app_for(api, max_body))
    await serve(app, config, shutdown_trigger=shutdown, task_status=task_status)


def bound_port(binds: list[str]) -> int:
    return int(binds[0].rsplit(":", 1)[1])
