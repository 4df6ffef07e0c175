"""Real servers on the libraries people build streaming endpoints with, on loopback, in
threads beside the tests' trio: ``sse-starlette`` under ``uvicorn``, ``websockets``,
``grpcio``, and an NDJSON line server on ``asyncio`` streams (tearline's NDJSON framing is
lines over TCP, with no HTTP around them).

Each streams the same known messages (``TEXTS``) and ends cleanly; each listens on a port from
the OS, plain or with a certificate from a ``trustme`` CA. The asyncio ones share one event loop
in one thread (``AsyncioThread``); grpcio runs its own thread pool. A socket is bound and
listening before a server is handed it, so a connection made at once waits in the backlog: no
polling for "started".
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import trustme
import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from websockets.asyncio.server import Server, ServerConnection
from websockets.asyncio.server import serve as ws_serve

LOOPBACK = "127.0.0.1"
#: what every server streams, in order: JSON texts with 2-, 3- and 4-byte UTF-8 characters,
#: no CR or LF (the line framing needs none), of different lengths
TEXTS = (
    '{"n":1,"text":"h\u00e9llo"}',
    '{"n":2,"text":"price 12 \u20ac, caf\u00e9 au lait"}',
    '{"n":3,"text":"needle \u6f22\u5b57"}',
    '{"n":4,"text":"rocket \U0001f680 and more text to make this one longer"}',
    '{"n":5,"text":"the end"}',
)
#: where each server serves its stream: real services' paths, not tearline's default
#: ``/stream``, so every case must say which path to ask for (``framing_options.path``)
PATHS = {
    "sse": "/v1/events",
    "websocket": "/v1/socket",
    "grpc": "/tearline.v1.Stream/Messages",
}
#: bounds on anything a server waits for (a stuck client never holds a test)
STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Tls:
    """A CA and a certificate it issued for 127.0.0.1, as files and contexts."""

    ca: trustme.CA
    cert: trustme.LeafCert
    ca_file: Path

    def server_context(self, alpn: list[str]) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.cert.configure_cert(context)
        if alpn:
            context.set_alpn_protocols(alpn)
        return context


def new_tls(folder: Path) -> Tls:
    ca = trustme.CA(organization_name="a third-party service's CA")
    cert = ca.issue_cert(LOOPBACK)
    ca_file = folder / "service-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return Tls(ca, cert, ca_file)


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    sock.listen(64)
    return sock


def port_of(sock: socket.socket) -> int:
    port: int = sock.getsockname()[1]
    return port


class AsyncioThread:
    """One asyncio event loop in a daemon thread, for the asyncio servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def submit(self, work: Coroutine[Any, Any, Any]) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def close(self) -> None:
        """Cancel what the servers left running (sse-starlette's shutdown watcher), stop."""

        async def cancel_the_rest() -> None:
            mine = asyncio.current_task()
            rest = [task for task in asyncio.all_tasks() if task is not mine]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        self.submit(cancel_the_rest()).result(STOP_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        self.loop.close()


# ---- SSE: sse-starlette under uvicorn --------------------------------------------------------


async def _events(request: Request) -> EventSourceResponse:
    async def texts() -> AsyncIterator[dict[str, str]]:
        for text in TEXTS:
            yield {"data": text}

    return EventSourceResponse(texts(), ping=0)  # no keep-alive comments: a known stream


async def _error_page(request: Request) -> PlainTextResponse:
    page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    return PlainTextResponse(page, status_code=502, media_type="text/html")


def sse_app() -> Starlette:
    return Starlette(routes=[Route(PATHS["sse"], _events)])


def error_page_app() -> Starlette:
    """What a gateway answers when the service behind it is down: an HTML page, status 502."""
    return Starlette(routes=[Route(PATHS["sse"], _error_page)])


class Uvicorn:
    """uvicorn serving ``app`` on a socket of its own, on ``loop`` (h11, no Date or Server
    header: the same head on every connection)."""

    def __init__(self, app: Starlette, loop: AsyncioThread, context: ssl.SSLContext | None):
        self.sock = listening_socket()
        config = uvicorn.Config(
            app,
            http="h11",
            lifespan="off",
            log_level="error",  # not a line per refused request
            server_header=False,
            date_header=False,
        )
        self.server = uvicorn.Server(config)
        # uvicorn builds a context from certificate files at load(); ours replaces it after
        # (serve() loads a config only once)
        config.load()
        config.ssl = context
        self.done = loop.submit(self.server.serve(sockets=[self.sock]))

    @property
    def port(self) -> int:
        return port_of(self.sock)

    def close(self) -> None:
        self.server.should_exit = True
        self.done.result(STOP_TIMEOUT_S)
        self.sock.close()


# ---- WebSocket: websockets -------------------------------------------------------------------


async def _ws_handler(connection: ServerConnection) -> None:
    if connection.request is None or connection.request.path != PATHS["websocket"]:
        await connection.close(1008, "no such path")  # policy violation: nothing here
        return
    for text in TEXTS:
        await connection.send(text)
    await connection.close()  # close 1000, then waits for the client's close (bounded)


class WebSockets:
    """A ``websockets`` server streaming ``TEXTS`` as text messages, then closing (1000)."""

    def __init__(self, loop: AsyncioThread, context: ssl.SSLContext | None) -> None:
        self.sock = listening_socket()
        self._loop = loop

        async def start() -> Server:
            return await ws_serve(
                _ws_handler,
                sock=self.sock,
                ssl=context,
                compression=None,  # no permessage-deflate: the frames carry the texts as they are
                close_timeout=STOP_TIMEOUT_S,
            )

        self.server: Server = loop.submit(start()).result(STOP_TIMEOUT_S)

    @property
    def port(self) -> int:
        return port_of(self.sock)

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            await self.server.wait_closed()

        self._loop.submit(stop()).result(STOP_TIMEOUT_S)


# ---- NDJSON: a line server on asyncio streams ------------------------------------------------


async def _ndjson_handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    for text in TEXTS:
        writer.write(text.encode() + b"\n")
        await writer.drain()
    writer.close()  # a clean close is NDJSON's end
    with contextlib.suppress(ConnectionError, ssl.SSLError):  # the peer reset: nothing to do
        await writer.wait_closed()


class Ndjson:
    """``asyncio.start_server`` writing ``TEXTS`` as LF-terminated lines, then closing."""

    def __init__(self, loop: AsyncioThread, context: ssl.SSLContext | None) -> None:
        self.sock = listening_socket()
        self._loop = loop
        self.server = loop.submit(
            asyncio.start_server(_ndjson_handler, sock=self.sock, ssl=context)
        ).result(STOP_TIMEOUT_S)

    @property
    def port(self) -> int:
        return port_of(self.sock)

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            await self.server.wait_closed()

        self._loop.submit(stop()).result(STOP_TIMEOUT_S)


# ---- gRPC: grpcio, a generic handler with raw bytes ------------------------------------------


def _stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    for text in TEXTS:
        yield text.encode()


class _Handler(grpc.GenericRpcHandler):
    """Serves one server-streaming method at its ``PATHS`` entry: no serializers, the messages
    are the bytes (no protoc, no generated code)."""

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        if handler_call_details.method != PATHS["grpc"]:
            return None
        return grpc.unary_stream_rpc_method_handler(_stream)


class Grpc:
    """A ``grpcio`` server (its own thread pool)."""

    def __init__(self, tls: Tls | None) -> None:
        self.server = grpc.server(ThreadPoolExecutor(max_workers=4))  # grpcio's defaults
        self.server.add_generic_rpc_handlers((_Handler(),))
        address = f"{LOOPBACK}:0"
        if tls is None:
            self.port = self.server.add_insecure_port(address)
        else:
            pair = (tls.cert.private_key_pem.bytes(), tls.cert.cert_chain_pems[0].bytes())
            self.port = self.server.add_secure_port(address, grpc.ssl_server_credentials([pair]))
        self.server.start()

    def close(self) -> None:
        self.server.stop(grace=None).wait(STOP_TIMEOUT_S)


class Running(Protocol):
    """A started server: where it listens, and how to stop it."""

    @property
    def port(self) -> int: ...

    def close(self) -> None: ...
