"""aiohttp, SSE and WebSocket.

SSE: ``session.get(url)`` and ``async for line in response.content`` (aiohttp's
``StreamReader`` splits lines), each line to the usual event assembly (``_sse``); each
dispatched event's data is a message. WebSocket: ``session.ws_connect(url)`` and
``async for msg in ws`` as aiohttp's docs show; each TEXT or BINARY message's data is a
message, and an ERROR message (aiohttp's way of surfacing a failure) is raised as the
exception it carries. Timeouts: the link's idle timeout between reads. aiohttp may open a
second connection on its own (it retries a GET whose connection closed before any response):
each message is handed on with the number of connections opened so far.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from harness.adapters._sse import EventAssembler
from harness.consumers.api import LinkInfo, Message


class WebSocketError(Exception):
    """aiohttp handed on an ERROR message without an exception in it."""


class _Connections:
    """Counts the connections a session opened (``TraceConfig.on_connection_create_end``)."""

    def __init__(self) -> None:
        self.opened = 0
        self.trace = aiohttp.TraceConfig()
        self.trace.on_connection_create_end.append(self._opened)

    async def _opened(self, *_: object) -> None:
        self.opened += 1


def _timeout(link: LinkInfo) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(sock_read=link.idle_timeout_s, sock_connect=link.idle_timeout_s)


def _url(link: LinkInfo) -> str:
    assert link.url is not None, "aiohttp speaks sse and websocket here"
    return link.url


async def consume_sse(link: LinkInfo) -> AsyncIterator[Message]:
    events = EventAssembler()
    headers = {"Accept": "text/event-stream"}
    connections = _Connections()
    async with (
        aiohttp.ClientSession(timeout=_timeout(link), trace_configs=[connections.trace]) as session,
        session.get(_url(link), headers=headers) as response,
    ):
        response.raise_for_status()
        async for raw in response.content:
            data = events.line(raw.decode("utf-8").removesuffix("\n").removesuffix("\r"))
            if data is not None:
                yield Message(data, connections.opened)


async def consume_websocket(link: LinkInfo) -> AsyncIterator[Message]:
    connections = _Connections()
    async with (
        aiohttp.ClientSession(timeout=_timeout(link), trace_configs=[connections.trace]) as session,
        session.ws_connect(_url(link), max_msg_size=link.max_message_bytes) as ws,
    ):
        async for message in ws:
            if message.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                yield Message(message.data, connections.opened)
            elif message.type is aiohttp.WSMsgType.ERROR:
                raise ws.exception() or WebSocketError("aiohttp: WebSocket error")
