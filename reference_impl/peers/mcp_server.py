"""The reference MCP server over TCP (trio): one exchange per connection, the core decides.

Each connection reads one request (``wire.ServerExchange``, bounded in time), answers it with
the core's reply (``mcp.server.McpServer``), one write per event with ``event_delay_ms``
between them, then closes gracefully (FIN, then a bounded drain, so the close is never an RST).
A request for another path than ``/mcp`` is refused with 404. ``executions`` counts the tool's
runs over every session; ``exchanges`` records what each connection asked and got.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import trio

from reference_impl.defaults import LOOPBACK
from reference_impl.errors import CodecError
from reference_impl.framing.http1 import Received
from reference_impl.framing.request import Refusal
from reference_impl.mcp.server import McpServer
from reference_impl.mcp.settings import MCP_PATH, ServerSettings
from reference_impl.mcp.wire import ServerExchange

READ_BYTES = 65536
REQUEST_TIMEOUT_S = 10.0
DRAIN_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class ExchangeLog:
    method: str
    status: int
    #: the events written (priming included)
    events: int
    #: the reply's end was written (False: cut on purpose, or the client left)
    complete: bool


@dataclass(slots=True)
class McpHttpServer:
    settings: ServerSettings = field(default_factory=ServerSettings)
    #: pause between two events of a stream, in milliseconds
    event_delay_ms: float = 0.0
    core: McpServer = field(init=False)
    exchanges: list[ExchangeLog] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.core = McpServer(self.settings)

    @property
    def executions(self) -> Counter[str]:
        return self.core.executions

    async def handle(self, stream: trio.SocketStream) -> None:
        try:
            await self._exchange(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, CodecError):
            pass  # the client left, stalled or sent no HTTP: its connection ends, not the server
        finally:
            await stream.aclose()

    async def _exchange(self, stream: trio.SocketStream) -> None:
        exchange = ServerExchange()
        received: Received | Refusal | None = None
        with trio.fail_after(REQUEST_TIMEOUT_S):
            while received is None:
                data = await stream.receive_some(READ_BYTES)
                if not data:
                    return
                received = exchange.receive_data(bytes(data))
        if isinstance(received, Received) and received.target.split("?")[0] != MCP_PATH:
            received = Refusal(404, "Not Found", f"no route {received.target} (served: {MCP_PATH})")
        if isinstance(received, Refusal):
            await stream.send_all(exchange.refusal(received))
            self.exchanges.append(ExchangeLog("", received.status, 0, True))
        else:
            await self._reply(stream, exchange, received)
        await stream.send_eof()
        with trio.move_on_after(DRAIN_TIMEOUT_S):
            while await stream.receive_some(READ_BYTES):
                pass

    async def _reply(
        self, stream: trio.SocketStream, exchange: ServerExchange, request: Received
    ) -> None:
        reply = self.core.handle(request)
        pieces = exchange.pieces(reply)
        events = len(reply.events or ())
        written = 0
        try:
            for index, piece in enumerate(pieces):
                if 1 < index <= events and self.event_delay_ms:
                    await trio.sleep(self.event_delay_ms / 1000)
                await stream.send_all(piece)
                written = index
        finally:
            complete = written == len(pieces) - 1 and reply.complete
            self.exchanges.append(
                ExchangeLog(request.method, reply.status, min(written, events), complete)
            )

    async def serve(
        self,
        host: str = LOOPBACK,
        port: int = 0,
        *,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen on ``host:port`` (0: a port from the OS) and report the port when ready."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self.handle, listeners)
            task_status.started(bound)
