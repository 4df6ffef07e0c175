"""The Anthropic Python SDK, sync and async: ``client.messages.create(..., stream=True)``
pointed at the link, each event it hands on reported as the event data it parsed it from.

Token payload, ``anthropic`` profile (the reference producer imitates the Messages SSE stream,
``event:`` names included, and answers the SDK's ``POST /v1/messages`` like any request). The
SDK's retries follow the link's reconnect budget; its read timeout is the link's idle timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
from anthropic.types import MessageParam

from harness.adapters._stainless import Recorder, Requests
from harness.consumers.api import LinkInfo, Message

MODEL = "claude-tearline"
MAX_TOKENS = 1024
PROMPT: list[MessageParam] = [{"role": "user", "content": "stream to tearline"}]


class _Anthropic(anthropic.Anthropic):
    recorder: Recorder

    # Any arguments: the SDK's releases differ in what they pass (2.16 added ``options``).
    def _make_sse_decoder(self, *args: Any, **kwargs: Any) -> Recorder:
        self.recorder = Recorder(super()._make_sse_decoder(*args, **kwargs))
        return self.recorder


class _AsyncAnthropic(anthropic.AsyncAnthropic):
    recorder: Recorder

    # Any arguments: the SDK's releases differ in what they pass (2.16 added ``options``).
    def _make_sse_decoder(self, *args: Any, **kwargs: Any) -> Recorder:
        self.recorder = Recorder(super()._make_sse_decoder(*args, **kwargs))
        return self.recorder


def _base_url(link: LinkInfo) -> str:
    return f"http://{link.host}:{link.port}"


def consume(link: LinkInfo) -> Iterator[Message]:
    requests = Requests()
    http = anthropic.DefaultHttpxClient(event_hooks={"request": [requests.request]})
    with _Anthropic(
        api_key="tearline",
        base_url=_base_url(link),
        max_retries=link.max_reconnects,
        timeout=link.idle_timeout_s,
        http_client=http,
    ) as client:
        stream = client.messages.create(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            messages=PROMPT,
            stream=True,
        )
        with stream:
            for _event in stream:
                yield Message(client.recorder.last, requests.sent)


async def consume_async(link: LinkInfo) -> AsyncIterator[Message]:
    requests = Requests()
    http = anthropic.DefaultAsyncHttpxClient(event_hooks={"request": [requests.arequest]})
    async with _AsyncAnthropic(
        api_key="tearline",
        base_url=_base_url(link),
        max_retries=link.max_reconnects,
        timeout=link.idle_timeout_s,
        http_client=http,
    ) as client:
        stream = await client.messages.create(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            messages=PROMPT,
            stream=True,
        )
        async with stream:
            async for _event in stream:
                yield Message(client.recorder.last, requests.sent)
