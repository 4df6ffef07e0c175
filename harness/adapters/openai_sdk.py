"""The OpenAI Python SDK, sync and async: ``client.chat.completions.create(..., stream=True)``
pointed at the link, each chunk it hands on reported as the event data it parsed it from.

Token payload, ``openai`` profile (the reference producer imitates the Chat Completions SSE
stream and answers the SDK's ``POST /chat/completions`` like any request). The SDK's retries
follow the link's reconnect budget; its read timeout is the link's idle timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import openai
from openai.types.chat import ChatCompletionMessageParam

from harness.adapters._stainless import Recorder, Requests
from harness.consumers.api import LinkInfo, Message

MODEL = "gpt-tearline"
PROMPT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "stream to tearline"}]


class _OpenAI(openai.OpenAI):
    recorder: Recorder

    def _make_sse_decoder(self) -> Recorder:
        self.recorder = Recorder(super()._make_sse_decoder())
        return self.recorder


class _AsyncOpenAI(openai.AsyncOpenAI):
    recorder: Recorder

    def _make_sse_decoder(self) -> Recorder:
        self.recorder = Recorder(super()._make_sse_decoder())
        return self.recorder


def _base_url(link: LinkInfo) -> str:
    return f"http://{link.host}:{link.port}"


def consume(link: LinkInfo) -> Iterator[Message]:
    requests = Requests()
    http = openai.DefaultHttpxClient(event_hooks={"request": [requests.request]})
    with _OpenAI(
        api_key="tearline",
        base_url=_base_url(link),
        max_retries=link.max_reconnects,
        timeout=link.idle_timeout_s,
        http_client=http,
    ) as client:
        stream = client.chat.completions.create(model=MODEL, messages=PROMPT, stream=True)
        with stream:
            for _chunk in stream:
                yield Message(client.recorder.last, requests.sent)


async def consume_async(link: LinkInfo) -> AsyncIterator[Message]:
    requests = Requests()
    http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [requests.arequest]})
    async with _AsyncOpenAI(
        api_key="tearline",
        base_url=_base_url(link),
        max_retries=link.max_reconnects,
        timeout=link.idle_timeout_s,
        http_client=http,
    ) as client:
        stream = await client.chat.completions.create(model=MODEL, messages=PROMPT, stream=True)
        async with stream:
            async for _chunk in stream:
                yield Message(client.recorder.last, requests.sent)
