"""The reference MCP client over TCP (trio): the core decides, this shell moves the bytes.

Each exchange is a connection of its own: connect, send the request, read the answer until it
is over (``wire.ClientExchange``). A read that waits longer than ``idle_timeout_s`` ends the
answer with ``STALLED``, so a call always ends: with its answer, or with a typed error
(``mcp.client``: ``Fail``). A cut stream is resumed as the core says, after its ``retry``
(capped at ``max_retry_ms``, so a server cannot make the client sleep for ever); a lost session
is replaced once and the request sent once more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import trio

from reference_impl.mcp import jsonrpc
from reference_impl.mcp.client import Call, ClientCore, Done, Fail, Resume, SessionLost, Step
from reference_impl.mcp.errors import McpError, McpErrorCode
from reference_impl.mcp.settings import SpecVersion
from reference_impl.mcp.wire import ClientExchange, Failed, Incoming

READ_BYTES = 65536


@dataclass(slots=True)
class McpHttpClient:
    host: str
    port: int
    version: SpecVersion
    idle_timeout_s: float = 5.0
    max_retry_ms: int = 5000
    core: ClientCore | None = None

    def __post_init__(self) -> None:
        if self.core is None:
            authority = f"[{self.host}]" if ":" in self.host else self.host
            self.core = ClientCore(self.version, f"{authority}:{self.port}")

    @property
    def session(self) -> ClientCore:
        assert self.core is not None
        return self.core

    async def exchange(self, exchange: ClientExchange, request: bytes) -> list[Incoming]:
        try:
            stream = await trio.open_tcp_stream(self.host, self.port)
        except OSError as err:
            return [Failed(McpError(McpErrorCode.CONNECT_FAILED, str(err)))]
        items: list[Incoming] = []
        async with stream:
            try:
                await stream.send_all(request)
                while not exchange.done:
                    with trio.move_on_after(self.idle_timeout_s) as waited:
                        data = await stream.receive_some(READ_BYTES)
                    if waited.cancelled_caught:
                        stalled = McpError(
                            McpErrorCode.STALLED, f"no byte for {self.idle_timeout_s} s"
                        )
                        return [*items, Failed(stalled)]
                    items += exchange.receive_data(bytes(data)) if data else exchange.receive_eof()
            except (trio.BrokenResourceError, ConnectionError):
                items += exchange.receive_eof()  # a reset ends the answer as a close does
        return items

    async def call(self, request: jsonrpc.Request) -> tuple[Call, Step]:
        """One request to its end: resumed as the core says, never waited on for nothing."""
        call = Call(self.session, request)
        exchange, data = self.session.post(request)
        while True:
            call.take(await self.exchange(exchange, data))
            step = call.next_step()
            if not isinstance(step, Resume):
                return call, step
            await trio.sleep(min(step.wait_ms, self.max_retry_ms) / 1000)
            exchange, data = self.session.resume(step.last_event_id)

    async def notify(self, message: jsonrpc.Notification) -> list[Incoming]:
        exchange, data = self.session.post(message)
        return await self.exchange(exchange, data)

    async def open(self) -> Step:
        """initialize, then the initialized notification."""
        _, step = await self.call(self.session.initialize())
        if isinstance(step, Done):
            await self.notify(self.session.initialized())
        return step

    async def run(self, steps: int, calls: int = 1) -> list[Step]:
        """A whole session: open it, list the tools, call ``work`` ``calls`` times with
        ``steps`` progress notifications; a lost session is replaced once and the request
        sent once more. It stops at the first request that does not end answered."""
        core = self.session
        out = [await self.open()]
        requests: list[Callable[[], jsonrpc.Request]] = [lambda: core.request("tools/list")]
        requests += [lambda: core.call_tool("work", {"steps": steps})] * calls
        for make in requests:
            if not isinstance(out[-1], Done):
                break
            _, step = await self.call(make())
            if isinstance(step, SessionLost) and core.sessions == 1:
                out += [step, await self.open()]
                if not isinstance(out[-1], Done):
                    break
                _, step = await self.call(make())
            out.append(step)
        return out


def failed(steps: list[Step]) -> Fail | None:
    """The typed error a session ended with, if it did not end answered."""
    last = steps[-1]
    if isinstance(last, Fail):
        return last
    if isinstance(last, SessionLost):
        return Fail(McpErrorCode.SESSION_LOST, "the session was lost again")
    return None
