"""The Python MCP SDK's client (``mcp`` 1.x, pinned in the clients extra) against the
reference server, with the library alone (no tearline adapter, no proxy): what it does when a
tool call's stream ends before its response. Recorded in docs/clients.md."""

from __future__ import annotations

from importlib import metadata

import trio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from reference_impl.mcp.settings import ServerSettings, SpecVersion
from reference_impl.peers.mcp_server import ExchangeLog, McpHttpServer

#: how long a call is given before it is taken to wait for ever (a clean one takes ~50 ms)
PATIENCE_S = 2.0


async def call_once(settings: ServerSettings) -> tuple[str | None, McpHttpServer]:
    """One session, one ``call_tool``: its text, or None when it was still waiting."""
    server = McpHttpServer(settings)
    text: str | None = None
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        with trio.move_on_after(PATIENCE_S):
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("work", {"steps": 2})
                text = result.content[0].text  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()
    return text, server


def test_the_pinned_version() -> None:
    assert metadata.version("mcp").split(".")[0] == "1"


async def test_a_clean_call_returns() -> None:
    text, server = await call_once(ServerSettings())
    assert text == "done 2"
    assert server.executions["work"] == 1


async def test_a_stream_resumed_after_the_server_closes_it_returns() -> None:
    text, server = await call_once(ServerSettings(close_after_events=1, retry_ms=10))
    assert text == "done 2"
    assert ExchangeLog("POST", 200, 1, False) in server.exchanges  # closed after priming
    assert ExchangeLog("GET", 200, 1, True) in server.exchanges  # the response, on the resume


async def stream_ends_first(version: SpecVersion) -> None:
    text, server = await call_once(ServerSettings(version=version, close_after_events=0))
    assert text is None  # call_tool was still waiting after PATIENCE_S
    call = [e for e in server.exchanges if e.method == "POST" and e.status == 200][-1]
    assert call == ExchangeLog("POST", 200, 0, False)  # its stream ended before any event
    assert server.executions["work"] == 1


async def test_call_tool_waits_for_ever_when_the_stream_ends_before_any_event() -> None:
    """The finding (python-sdk #1577, #1811): no event id, so no resume, and no error."""
    versions: tuple[SpecVersion, ...] = ("2025-06-18", "2025-11-25")
    for version in versions:
        await stream_ends_first(version)


async def test_call_tool_waits_for_ever_when_the_response_never_comes() -> None:
    """The stream ends properly, and the replay has no response either: the SDK resumes, then
    waits for ever instead of raising."""
    text, server = await call_once(ServerSettings(mode="lose-final-response", retry_ms=10))
    assert text is None
    assert server.executions["work"] == 1
