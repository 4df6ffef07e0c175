"""A small SSE service of "your own" for docs/chaos-testing.md: an OpenAI-style chat completion
stream on sse-starlette under uvicorn, nothing of tearline in it.

``GET /stream`` answers ``text/event-stream`` with one ``chat.completion.chunk`` per token (the
first carries the role, the last ``finish_reason: "stop"``), then ``data: [DONE]``, the way
OpenAI's API streams, a token every ``--token-ms`` as a model would. ``POST
/v1/chat/completions`` answers the same stream as OpenAI's endpoint does: only to a POST (405
otherwise), with a JSON body (415 without ``Content-Type: application/json``) that asks for a
stream (400 for a body without ``messages`` and ``"stream": true``). The text holds 2-, 3- and
4-byte UTF-8 characters, written raw, so a cut can land inside one. sse-starlette ends each
line with CRLF, and uvicorn sends the body chunked.

    python docs/examples/sse_service.py --port 18080
    python docs/examples/sse_service.py --port 18443 --certfile server.pem --keyfile server.key
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import AsyncIterator

import anyio
import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

#: the answer, as the model would stream it: one token per event
TOKENS = (
    "Stream",
    "ing",
    " a",
    " café",
    " answer",
    ":",
    " 流式",
    " tokens",
    " arrive",
    " one",
    " by",
    " one",
    " 🚀",
    ",",
    " naïve",
    " clients",
    " fuse",
    " or",
    " cut",
    " them",
    ".",
)


def chunk(delta: dict[str, str], finish_reason: str | None = None) -> str:
    """One ``chat.completion.chunk`` as compact JSON, non-ASCII characters raw."""
    body = {
        "id": "chatcmpl-demo",
        "object": "chat.completion.chunk",
        "model": "demo-1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


async def events(token_s: float) -> AsyncIterator[dict[str, str]]:
    yield {"data": chunk({"role": "assistant", "content": ""})}
    for token in TOKENS:
        await anyio.sleep(token_s)
        yield {"data": chunk({"content": token})}
    yield {"data": chunk({}, finish_reason="stop")}
    yield {"data": "[DONE]"}


async def stream(token_s: float, _: Request) -> EventSourceResponse:
    return EventSourceResponse(events(token_s))


def refusal(status: int, message: str) -> JSONResponse:
    """An error as OpenAI's API writes one."""
    error = {"type": "invalid_request_error", "message": message}
    return JSONResponse({"error": error}, status_code=status)


async def completions(token_s: float, request: Request) -> Response:
    """What a streaming call of the chat completions endpoint must be, checked as the real
    endpoint checks it."""
    if request.headers.get("content-type", "").split(";")[0] != "application/json":
        return refusal(415, "send Content-Type: application/json")
    try:
        body = json.loads(await request.body())
    except ValueError:
        return refusal(400, "the body is not JSON")
    if not isinstance(body, dict) or body.get("stream") is not True or "messages" not in body:
        return refusal(400, "a streaming call needs messages and stream: true")
    return EventSourceResponse(events(token_s))


def app(token_ms: float) -> Starlette:
    token_s = token_ms / 1000
    return Starlette(
        routes=[
            Route("/stream", functools.partial(stream, token_s)),
            Route(
                "/v1/chat/completions", functools.partial(completions, token_s), methods=["POST"]
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--token-ms", type=float, default=10.0, help="time between tokens")
    parser.add_argument("--certfile", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--keyfile", help="the certificate's key (PEM)")
    args = parser.parse_args()
    uvicorn.run(
        app(args.token_ms),
        host="127.0.0.1",  # loopback only
        port=args.port,
        ssl_certfile=args.certfile,
        ssl_keyfile=args.keyfile,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
