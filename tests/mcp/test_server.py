"""The reference server's core, request by request (values in, replies out)."""

from __future__ import annotations

import json

import pytest

from reference_impl.framing.http1 import Received
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.jsonrpc import Notification, Request
from reference_impl.mcp.server import McpServer, Reply
from reference_impl.mcp.settings import SPEC_VERSIONS, ServerSettings, SpecVersion
from reference_impl.mcp.streams import EventLog

ACCEPT = {"accept": "application/json, text/event-stream"}


def post(message: jsonrpc.Message | list[jsonrpc.Message], **headers: str) -> Received:
    named = {k.replace("_", "-"): v for k, v in headers.items()}
    return Received("POST", "/mcp", {**ACCEPT, **named}, jsonrpc.encode(message))


def opened(settings: ServerSettings) -> tuple[McpServer, str]:
    server = McpServer(settings)
    reply = server.handle(post(Request(1, "initialize", {"protocolVersion": settings.version})))
    session = dict(reply.headers)["Mcp-Session-Id"]
    assert (
        server.handle(
            post(Notification("notifications/initialized"), mcp_session_id=session)
        ).status
        == 202
    )
    return server, session


def messages(reply: Reply) -> list[jsonrpc.Message]:
    if reply.events is None:
        return jsonrpc.decode(reply.body, batches=True)
    return [m for e in reply.events if e.data for m in jsonrpc.decode(e.data)]


def call(steps: int, ident: int = 2) -> Request:
    return Request(
        ident,
        "tools/call",
        {"name": "work", "arguments": {"steps": steps}, "_meta": {"progressToken": "t"}},
    )


@pytest.mark.parametrize("version", SPEC_VERSIONS)
def test_initialize_answers_with_the_servers_version_and_a_session(version: SpecVersion) -> None:
    server = McpServer(ServerSettings(version=version))
    reply = server.handle(post(Request(1, "initialize", {"protocolVersion": "1999-01-01"})))
    assert reply.status == 200
    assert dict(reply.headers)["Mcp-Session-Id"] == "1"
    (answer,) = messages(reply)
    assert isinstance(answer, jsonrpc.Response)
    assert answer.result["protocolVersion"] == version


def test_a_tool_call_streams_progress_before_its_response_and_is_counted() -> None:
    server, session = opened(ServerSettings(version="2025-11-25"))
    reply = server.handle(post(call(3), mcp_session_id=session))
    assert reply.status == 200 and reply.complete
    assert reply.events is not None
    assert [e.id for e in reply.events] == ["2-0", "2-1", "2-2", "2-3", "2-4"]
    assert reply.events[0].data == b"" and reply.events[0].retry_ms == 1000
    got = messages(reply)
    assert [m.params["progress"] for m in got[:3] if isinstance(m, Notification)] == [1, 2, 3]
    assert got[3] == jsonrpc.Response(
        2, {"content": [{"type": "text", "text": "done 3"}], "isError": False}
    )
    assert server.executions["work"] == 1


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_no_priming_event_before_2025_11_25(version: SpecVersion) -> None:
    server, session = opened(ServerSettings(version=version))
    reply = server.handle(post(call(1), mcp_session_id=session))
    assert reply.events is not None
    assert [e.id for e in reply.events] == ["2-1", "2-2"]


def test_json_answers_when_nothing_comes_first() -> None:
    server, session = opened(ServerSettings(answer="json"))
    reply = server.handle(post(Request(2, "tools/list"), mcp_session_id=session))
    assert reply.events is None
    assert dict(reply.headers)["Content-Type"] == "application/json"
    (answer,) = messages(reply)
    assert isinstance(answer, jsonrpc.Response) and answer.result["tools"][0]["name"] == "work"


def test_a_batch_under_2025_03_26_only() -> None:
    old, session = opened(ServerSettings(version="2025-03-26", answer="json"))
    batch: list[jsonrpc.Message] = [Request(2, "ping"), Request(3, "ping")]
    assert messages(old.handle(post(batch, mcp_session_id=session))) == [
        jsonrpc.Response(2, {}),
        jsonrpc.Response(3, {}),
    ]
    new, session = opened(ServerSettings(version="2025-06-18"))
    assert new.handle(post(batch, mcp_session_id=session)).status == 400


def test_event_ids_are_unique_per_session() -> None:
    server, session = opened(ServerSettings())
    ids = [
        e.id
        for n in range(2, 6)
        for e in server.handle(post(call(2, n), mcp_session_id=session)).events or ()
    ]
    assert len(ids) == len(set(ids)) == 16


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 400),  # no session id
        ({"mcp_session_id": "9"}, 404),  # a session that never was
        ({"mcp_session_id": "1", "mcp_protocol_version": "2025-03-26"}, 400),
    ],
)
def test_requests_outside_a_session(headers: dict[str, str], status: int) -> None:
    server, _ = opened(ServerSettings(version="2025-06-18"))
    reply = server.handle(post(Request(2, "ping"), **headers))
    assert reply.status == status
    (error,) = messages(reply)
    assert isinstance(error, jsonrpc.ErrorResponse) and error.id is None


def test_what_the_server_refuses() -> None:
    server, session = opened(ServerSettings())
    no_accept = Received(
        "POST", "/mcp", {"mcp-session-id": session}, jsonrpc.encode(Request(2, "ping"))
    )
    assert server.handle(no_accept).status == 406
    bad = Received("POST", "/mcp", {**ACCEPT, "mcp-session-id": session}, b"{")
    assert server.handle(bad).status == 400
    get = Received("GET", "/mcp", {"mcp-session-id": session}, b"")
    assert server.handle(get).status == 405
    put = Received("PUT", "/mcp", {"mcp-session-id": session}, b"")
    assert server.handle(put).status == 405
    unknown = server.handle(post(Request(2, "nope"), mcp_session_id=session))
    assert messages(unknown) == [jsonrpc.ErrorResponse(2, jsonrpc.METHOD_NOT_FOUND, "nope")]
    no_tool = server.handle(post(Request(3, "tools/call", {"name": "x"}), mcp_session_id=session))
    assert [type(m) for m in messages(no_tool)] == [jsonrpc.ErrorResponse]
    assert server.executions["work"] == 0


def test_delete_ends_the_session() -> None:
    server, session = opened(ServerSettings())
    assert server.handle(Received("DELETE", "/mcp", {"mcp-session-id": session}, b"")).status == 200
    assert server.handle(post(Request(2, "ping"), mcp_session_id=session)).status == 404


def resumed(mode: str, after: str = "2-2") -> list[str]:
    settings = ServerSettings(mode=mode, close_after_events=3)  # type: ignore[arg-type]
    server, session = opened(settings)
    first = server.handle(post(call(3), mcp_session_id=session))
    assert [e.id for e in first.events or ()] == ["2-0", "2-1", "2-2"] and not first.complete
    reply = server.handle(
        Received("GET", "/mcp", {"mcp-session-id": session, "last-event-id": after}, b"")
    )
    assert reply.status == 200 and reply.complete
    return [e.id for e in reply.events or ()]


def test_a_resume_replays_exactly_the_rest_of_its_stream() -> None:
    assert resumed("correct") == ["2-3", "2-4"]
    assert resumed("correct", after="2-0") == ["2-1", "2-2", "2-3", "2-4"]


def test_the_misbehaving_replays() -> None:
    assert resumed("duplicate-on-replay") == ["2-2", "2-3", "2-4"]
    assert resumed("drop-on-replay") == ["2-4"]
    assert resumed("replay-other-streams") == ["2-3", "2-4", "1-1"]


def test_a_resume_from_an_unknown_id_is_refused() -> None:
    server, session = opened(ServerSettings())
    for after in ("7-1", "1-9", "x"):
        headers = {"mcp-session-id": session, "last-event-id": after}
        assert server.handle(Received("GET", "/mcp", headers, b"")).status == 400


def test_lose_final_response_ends_the_stream_without_it() -> None:
    server, session = opened(ServerSettings(mode="lose-final-response"))
    reply = server.handle(post(call(2), mcp_session_id=session))
    assert reply.complete
    assert [json.loads(e.data)["method"] for e in reply.events or () if e.data] == [
        "notifications/progress"
    ] * 2
    assert server.executions["work"] == 1


def test_forget_session_forgets_it_once_initialized() -> None:
    server, session = opened(ServerSettings(mode="forget-session"))
    assert server.handle(post(Request(2, "ping"), mcp_session_id=session)).status == 404


def test_the_log_numbers_each_stream() -> None:
    log = EventLog()
    assert (log.open(), log.open()) == (1, 2)
    assert [log.append(1, b"x").id, log.append(2, b"").id, log.append(2, b"y").id] == [
        "1-1",
        "2-0",
        "2-1",
    ]
