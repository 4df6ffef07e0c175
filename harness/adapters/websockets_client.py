"""websockets (asyncio): ``async with connect(url) as ws: async for message in ws``, as its
docs show; each message (``str`` for text, ``bytes`` for binary) is a message. The iteration
ends on a normal close and raises ``ConnectionClosedError`` otherwise."""

from __future__ import annotations

from collections.abc import AsyncIterator

from websockets.asyncio.client import connect

from harness.consumers.api import LinkInfo


async def consume(link: LinkInfo) -> AsyncIterator[str | bytes]:
    assert link.url is not None, "websockets speaks websocket"
    async with connect(
        link.url, max_size=link.max_message_bytes, open_timeout=link.idle_timeout_s
    ) as ws:
        async for message in ws:
            yield message
