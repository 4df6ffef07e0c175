"""The reference MCP server and client over loopback TCP (trio): each version, each mode, a
stream the server closes resumed after its ``retry``, and a server that stalls."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from reference_impl.mcp import jsonrpc
from reference_impl.mcp.checker import Finding, Violation
from reference_impl.mcp.client import Done, Fail, SessionLost, Step
from reference_impl.mcp.errors import McpErrorCode
from reference_impl.mcp.settings import SPEC_VERSIONS, ServerSettings, SpecVersion
from reference_impl.peers.mcp_client import McpHttpClient, failed
from reference_impl.peers.mcp_server import ExchangeLog, McpHttpServer

DONE = jsonrpc.Response(3, {"content": [{"type": "text", "text": "done 2"}], "isError": False})


async def session(server: McpHttpServer, version: SpecVersion) -> tuple[McpHttpClient, list[Step]]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        peer = McpHttpClient("127.0.0.1", port, version)
        with trio.fail_after(10):
            steps = await peer.run(2)
        nursery.cancel_scope.cancel()
    return peer, steps


@pytest.mark.parametrize("version", SPEC_VERSIONS)
async def test_a_clean_session(version: SpecVersion) -> None:
    server = McpHttpServer(ServerSettings(version=version), event_delay_ms=1)
    peer, steps = await session(server, version)
    assert steps == [steps[0], steps[1], Done(DONE)]
    assert peer.session.checker.violations() == []
    assert server.executions["work"] == 1
    events = {"2025-11-25": 4, "2025-06-18": 3, "2025-03-26": 3}[version]
    assert server.exchanges[-1] == ExchangeLog("POST", 200, events, True)
    assert [e.method for e in server.exchanges] == ["POST"] * 4


async def test_a_stream_the_server_closes_is_resumed_after_retry() -> None:
    settings = ServerSettings(close_after_events=2, retry_ms=30)
    server = McpHttpServer(settings)
    start = trio.current_time()
    peer, steps = await session(server, "2025-11-25")
    assert steps[-1] == Done(DONE)
    assert trio.current_time() - start >= 0.03
    assert [(e.method, e.complete) for e in server.exchanges[3:]] == [
        ("POST", False),
        ("GET", True),
    ]
    assert peer.session.checker.violations() == []


async def test_a_misbehaving_replay_is_found() -> None:
    settings = ServerSettings(close_after_events=2, retry_ms=1, mode="duplicate-on-replay")
    peer, steps = await session(McpHttpServer(settings), "2025-11-25")
    assert steps[-1] == Done(DONE)  # the client took the response once, the repeat was an event
    assert peer.session.checker.violations() == [Finding(Violation.DUPLICATE_EVENT, "3-1")]


async def test_a_lost_final_response_ends_in_a_typed_error() -> None:
    settings = ServerSettings(retry_ms=1, mode="lose-final-response")
    server = McpHttpServer(settings)
    _, steps = await session(server, "2025-11-25")
    assert failed(steps) == Fail(
        McpErrorCode.STREAM_CUT, "the stream ended cleanly without the response"
    )
    assert server.executions["work"] == 1  # resumes never run the tool again


async def test_a_lost_session_is_replaced_once() -> None:
    server = McpHttpServer(ServerSettings(version="2025-06-18", mode="forget-session"))
    _, steps = await session(server, "2025-06-18")
    assert [type(s) for s in steps] == [Done, SessionLost, Done, SessionLost]
    assert [e.status for e in server.exchanges] == [200, 202, 404, 200, 202, 404]
    assert failed(steps) == Fail(McpErrorCode.SESSION_LOST, "the session was lost again")


async def test_a_stalled_server_is_a_typed_error() -> None:
    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listener, *_ = await nursery.start(partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
        port = listener.socket.getsockname()[1]
        peer = McpHttpClient("127.0.0.1", port, "2025-11-25", idle_timeout_s=0.05)
        with trio.fail_after(5):
            steps = await peer.run(1)
        nursery.cancel_scope.cancel()
    assert [type(s) for s in steps] == [Fail]
    assert isinstance(steps[0], Fail) and steps[0].code is McpErrorCode.STALLED
    assert peer.session.checker.violations() == []


async def test_another_path_is_404() -> None:
    server = McpHttpServer()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while data := await stream.receive_some(4096):
            answer += data
        nursery.cancel_scope.cancel()
    assert answer.startswith(b"HTTP/1.1 404 Not Found\r\n")
