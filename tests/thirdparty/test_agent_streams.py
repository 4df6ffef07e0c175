"""The openai-responses and anthropic token profiles on bytes tearline did not write: an
sse-starlette service under uvicorn streams a Responses turn (text, then a function call) and
an Anthropic turn (text, a ping, a ``tool_use`` block), its JSON written by the standard
library's encoder (spaces after separators, unlike tearline's producer), and the reference
consumer reads it through tearline's proxy: whole, cut inside a tool call's arguments, with an
error event injected after partial text, with a fragment of tool input lost."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import trio
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from harness.judging.results import CaseResult, Outcome
from harness.running.case import run_case
from tests.harness.conftest import one_case
from tests.thirdparty.conftest import CASE_TIMEOUT_S, DEADLINE_MS
from tests.thirdparty.servers import LOOPBACK, AsyncioThread, Uvicorn

Event = tuple[str, dict[str, object]]


def _responses_turn() -> list[Event]:
    message = {"id": "msg_9", "type": "message", "role": "assistant", "content": []}
    call = {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "get_weather"}
    text = {"item_id": "msg_9", "output_index": 0, "content_index": 0}
    args = {"item_id": "fc_9", "output_index": 1}
    response = {"id": "resp_9", "object": "response", "output": []}
    events: list[tuple[str, dict[str, object]]] = [
        ("response.created", {"response": {**response, "status": "in_progress"}}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**message, "status": "in_progress"}},
        ),
        ("response.content_part.added", {**text, "part": {"type": "output_text", "text": ""}}),
        ("response.output_text.delta", {**text, "delta": "Bonjour", "obfuscation": "k2Jd"}),
        ("response.output_text.delta", {**text, "delta": " 世界 🚀", "obfuscation": "x"}),
        ("response.output_text.done", {**text, "text": "Bonjour 世界 🚀"}),
        (
            "response.content_part.done",
            {**text, "part": {"type": "output_text", "text": "Bonjour 世界 🚀"}},
        ),
        (
            "response.output_item.done",
            {"output_index": 0, "item": {**message, "status": "completed"}},
        ),
        ("response.output_item.added", {"output_index": 1, "item": {**call, "arguments": ""}}),
        (
            "response.function_call_arguments.delta",
            {**args, "delta": '{"city": "Zü', "obfuscation": "p"},
        ),
        (
            "response.function_call_arguments.delta",
            {**args, "delta": 'rich"}', "obfuscation": "Qw"},
        ),
        ("response.function_call_arguments.done", {**args, "arguments": '{"city": "Zürich"}'}),
        (
            "response.output_item.done",
            {"output_index": 1, "item": {**call, "arguments": '{"city": "Zürich"}'}},
        ),
        ("response.completed", {"response": {**response, "status": "completed"}}),
    ]
    return [
        (kind, {"type": kind, "sequence_number": n, **body})
        for n, (kind, body) in enumerate(events)
    ]


def _anthropic_turn() -> list[Event]:
    tool = {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {}}
    events: list[dict[str, object]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_9", "type": "message", "role": "assistant", "content": []},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Je regarde"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": " 天気 🙂"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": tool},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '"Paris"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return [(str(e["type"]), e) for e in events]


TURNS = {"/v1/responses": _responses_turn(), "/v1/messages": _anthropic_turn()}
PROFILES = {"/v1/responses": "openai-responses", "/v1/messages": "anthropic"}


async def _stream(request: Request) -> EventSourceResponse:
    async def events() -> AsyncIterator[dict[str, str]]:
        for kind, data in TURNS[request.url.path]:
            yield {"event": kind, "data": json.dumps(data, ensure_ascii=False)}

    return EventSourceResponse(events(), ping=0)  # no keep-alive comments: a known stream


@pytest.fixture(scope="module")
def port(asyncio_thread: AsyncioThread) -> Iterator[int]:
    app = Starlette(routes=[Route(path, _stream) for path in TURNS])
    server = Uvicorn(app, asyncio_thread, None)
    yield server.port
    server.close()


async def run(port: int, path: str, faults: str, expect: str) -> CaseResult:
    text = (
        "name: foreign-agent-stream\n"
        "description: an sse-starlette service streaming an LLM API's events\n"
        f"link: {{framing: sse, payload: tokens, tokens: {{profile: {PROFILES[path]}}},"
        f" producer: {{upstream: '{LOOPBACK}:{port}'}}, framing_options: {{path: {path}}}}}\n"
        f"faults: {faults}\n"
        f"expect: {expect}\n"
        f"deadline_ms: {DEADLINE_MS}\n"
    )
    with trio.fail_after(CASE_TIMEOUT_S):
        return await run_case(one_case(text))


@pytest.mark.parametrize(("path", "frames"), [("/v1/responses", 14), ("/v1/messages", 13)])
async def test_a_whole_turn_is_complete_explicit(port: int, path: str, frames: int) -> None:
    expect = f"{{verdict: COMPLETE_EXPLICIT, complete: true, accepted_messages: {frames}}}"
    result = await run(port, path, "[]", expect)
    assert (result.outcome, result.diagnosis) == (
        Outcome.PASS,
        f"COMPLETE_EXPLICIT, complete=True, {frames} accepted",
    )
    assert result.report is not None
    assert result.report.recorded.stream_completion_signal_receipt == (
        "openai-responses: response.completed (sequence_number 13)"
        if path == "/v1/responses"
        else 'anthropic: {"type": "message_stop"}'
    )


@pytest.mark.parametrize(
    ("path", "faults", "verdict"),
    [
        # inside the function call's second argument delta (frame 11)
        (
            "/v1/responses",
            "[{kind: kill, how: fin, at: {frame: 11, fraction: 0.5}}]",
            "PARTIAL_MID_TOKEN",
        ),
        # an error event where sequence_number 4 was due, after the first text delta
        ("/v1/responses", "[{kind: inject_event, event: error, before_frame: 5}]", "REMOTE_ERROR"),
        ("/v1/responses", "[{kind: drop_frame, frame: 10}]", "SEQUENCE_BROKEN"),
        (
            "/v1/messages",
            "[{kind: kill, how: fin, at: {frame: 10, fraction: 0.5}}]",
            "PARTIAL_MID_TOKEN",
        ),
        ("/v1/messages", "[{kind: inject_event, event: error, before_frame: 9}]", "REMOTE_ERROR"),
        ("/v1/messages", "[{kind: drop_frame, frame: 9}]", "MALFORMED_PAYLOAD"),
    ],
    ids=[
        "responses-cut-in-arguments",
        "responses-error",
        "responses-gap",
        "anthropic-cut-in-input",
        "anthropic-overloaded",
        "anthropic-input-lost",
    ],
)
async def test_a_broken_turn_is_never_handed_on(
    port: int, path: str, faults: str, verdict: str
) -> None:
    expect = f"{{verdict: {verdict}, complete: false, accepted_messages: 0}}"
    result = await run(port, path, faults, expect)
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert result.report is not None
    report = result.report
    # a typed error is the report's error code (under seed 002's verdict for the stream)
    got = report.verdict if verdict.startswith("PARTIAL") else report.error_code
    assert (got, report.complete) == (verdict, False)
    assert [f.name for f in result.timeline.faults] == [
        faults.split("kind: ")[1].split(",", maxsplit=1)[0]
    ]
