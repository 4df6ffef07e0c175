"""httpx-sse: ``connect_sse(client, "GET", url)`` and ``iter_sse()``, as its README shows; each
event's ``data`` is a message. The client's read timeout is the link's idle timeout."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
from httpx_sse import aconnect_sse, connect_sse

from harness.consumers.api import LinkInfo


def _url(link: LinkInfo) -> str:
    assert link.url is not None, "httpx-sse speaks sse"
    return link.url


def consume(link: LinkInfo) -> Iterator[str]:
    with (
        httpx.Client(timeout=link.idle_timeout_s) as client,
        connect_sse(client, "GET", _url(link)) as source,
    ):
        for event in source.iter_sse():
            yield event.data


async def consume_async(link: LinkInfo) -> AsyncIterator[str]:
    async with (
        httpx.AsyncClient(timeout=link.idle_timeout_s) as client,
        aconnect_sse(client, "GET", _url(link)) as source,
    ):
        async for event in source.aiter_sse():
            yield event.data
