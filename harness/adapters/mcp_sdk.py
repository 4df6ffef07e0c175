"""The Python MCP SDK's client (``mcp`` 1.x), as its README shows it:
``streamable_http_client(url)`` (1.x's ``streamablehttp_client`` under its current name) and
a ``ClientSession`` that initializes, lists the tools and calls ``work``, once per call, with a
progress callback. Each call's result text is handed on as it returns. The HTTP client's
timeout is the link's idle timeout (an ``httpx.AsyncClient`` of the SDK's own making, as
``create_mcp_http_client`` makes it); a call itself has none (``read_timeout_seconds`` left
out, as the README leaves it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import TextContent


async def call_tools(url: str, calls: int, steps: int, idle_timeout_s: float) -> AsyncIterator[str]:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        """Asked for, so that progress comes before each result; nothing else is done."""

    http = create_mcp_http_client(timeout=httpx.Timeout(idle_timeout_s))
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        for _ in range(calls):
            result = await session.call_tool(
                "work", {"steps": steps}, progress_callback=on_progress
            )
            if result.isError:
                raise RuntimeError(f"the tool call failed: {result.content!r}")
            yield "".join(c.text for c in result.content if isinstance(c, TextContent))
