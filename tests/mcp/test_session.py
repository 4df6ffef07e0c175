"""Whole sessions between the reference cores, in memory: each spec version, each of the
server's modes, answers cut at every byte, and the checker's findings exact."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.mcp import jsonrpc
from reference_impl.mcp.checker import Finding, SessionChecker, Violation
from reference_impl.mcp.client import Call, ClientCore, Done, Fail, SessionLost
from reference_impl.mcp.errors import McpErrorCode
from reference_impl.mcp.memory import Loopback, bytewise, whole
from reference_impl.mcp.server import McpServer
from reference_impl.mcp.settings import SPEC_VERSIONS, ServerMode, ServerSettings, SpecVersion
from reference_impl.mcp.wire import Delivered, Ended
from tests.wire import examples, split_at

DONE_3 = jsonrpc.Response(3, {"content": [{"type": "text", "text": "done 2"}], "isError": False})


def loopback(version: SpecVersion = "2025-11-25", **settings: object) -> Loopback:
    server = McpServer(ServerSettings(version=version, **settings))  # type: ignore[arg-type]
    return Loopback(server, ClientCore(version, "127.0.0.1:9"))


@pytest.mark.parametrize("version", SPEC_VERSIONS)
@pytest.mark.parametrize("answer", ["sse", "json"])
@pytest.mark.parametrize("split", [whole, bytewise])
def test_a_clean_session(version: SpecVersion, answer: str, split: object) -> None:
    link = loopback(version, answer=answer)
    link.split = split  # type: ignore[assignment]
    steps = link.session(2)
    assert [type(s) for s in steps] == [Done, Done, Done]
    assert steps[-1] == Done(DONE_3)
    assert link.core.checker.violations() == []
    assert link.server.executions["work"] == 1
    assert len(link.wire) == 4  # initialize, initialized, tools/list, tools/call


@given(cuts=st.lists(st.integers(0, 2000), max_size=20))
@example(cuts=[5, 6, 7, 300])
@examples(50)
def test_any_split_gives_the_same_session(cuts: list[int]) -> None:
    link = loopback(close_after_events=2)
    link.split = lambda data: split_at(data, cuts)
    assert link.session(2)[-1] == Done(DONE_3)
    assert link.core.checker.violations() == []


@pytest.mark.parametrize("version", SPEC_VERSIONS)
def test_a_stream_the_server_closes_is_resumed(version: SpecVersion) -> None:
    link = loopback(version, close_after_events=2)
    assert link.session(2)[-1] == Done(DONE_3)
    assert len(link.wire) == 5  # only the tool call's stream is longer than 2 events
    assert link.wire[-1][0].startswith(b"GET /mcp HTTP/1.1\r\n")
    assert b"Last-Event-ID: 3-" in link.wire[-1][0]
    assert link.core.checker.violations() == []


def test_every_cut_of_the_tool_calls_answer_ends_in_one_answer() -> None:
    """Cut the tools/call answer at every byte: with a priming event the client resumes and
    gets its response; before any event id it gives up with STREAM_CUT. Never no answer,
    never two, and the tool ran once."""
    length = _call_answer_length()
    outcomes: dict[type, int] = {}
    for cut in range(length):
        link = loopback()
        link.cut = {4: cut}
        step = link.session(2)[-1]
        outcomes[type(step)] = outcomes.get(type(step), 0) + 1
        if isinstance(step, Fail):
            assert step.code is McpErrorCode.STREAM_CUT, cut
        else:
            assert step == Done(DONE_3), cut
        assert link.core.checker.violations() == [], cut
        assert link.server.executions["work"] == 1
    assert outcomes[Done] > outcomes[Fail] > 0


def _call_answer_length() -> int:
    link = loopback()
    link.session(2)
    return len(link.wire[3][1])


MODES: dict[ServerMode, tuple[type, list[Finding]]] = {
    "correct": (Done, []),
    "duplicate-on-replay": (Done, [Finding(Violation.DUPLICATE_EVENT, "3-2")]),
    "drop-on-replay": (Done, [Finding(Violation.GAP, "3-4")]),
    "replay-other-streams": (
        Done,
        [
            Finding(Violation.FOREIGN_EVENT, "1-1"),
            Finding(Violation.DUPLICATE_RESPONSE, "1"),  # initialize's, again
            Finding(Violation.FOREIGN_EVENT, "2-1"),
            Finding(Violation.DUPLICATE_RESPONSE, "2"),  # tools/list's, again
        ],
    ),
    "lose-final-response": (Fail, []),
    "forget-session": (SessionLost, []),
}


@pytest.mark.parametrize("mode", MODES)
def test_what_the_client_sees_of_each_mode(mode: ServerMode) -> None:
    link = loopback(mode=mode, close_after_events=3)
    steps = link.session(3)
    kind, findings = MODES[mode]
    assert type(steps[-1]) is kind
    assert link.core.checker.violations() == findings


def test_a_lost_session_is_replaced_once() -> None:
    link = loopback(mode="forget-session")
    steps = link.session(1)
    assert [type(s) for s in steps] == [Done, SessionLost, Done, SessionLost]
    assert link.core.sessions == 2
    assert link.core.checker.violations() == []
    assert link.server.made == 2


def test_a_lost_final_response_is_a_typed_error_after_the_resumes() -> None:
    link = loopback(mode="lose-final-response")
    step = link.session(2)[-1]
    assert step == Fail(McpErrorCode.STREAM_CUT, "the stream ended cleanly without the response")
    methods = [request.split(b" ", 1)[0] for request, _ in link.wire[3:]]
    assert methods == [b"POST", b"GET", b"GET"]  # two resumes, then the client gives up


def test_the_version_header_follows_the_version() -> None:
    for version, sent in (("2025-03-26", False), ("2025-06-18", True), ("2025-11-25", True)):
        link = loopback(version)  # type: ignore[arg-type]
        link.session(0)
        assert (b"MCP-Protocol-Version: " + version.encode() in link.wire[2][0]) is sent
        assert b"MCP-Protocol-Version" not in link.wire[0][0]


def test_the_checker_finds_each_violation() -> None:
    checker = SessionChecker()
    one, two = jsonrpc.Request(1, "a"), jsonrpc.Request(2, "b")
    checker.request(one)
    checker.request(two)
    checker.request(one)
    checker.received(jsonrpc.Response(1, {}), "1-1")
    checker.received(jsonrpc.Response(1, {}), "1-2")
    checker.received(jsonrpc.Response(9, {}))
    checker.received(jsonrpc.Notification("n"), "1-2")
    checker.received(jsonrpc.Notification("n"), "1-5")
    checker.received(jsonrpc.Notification("n"), "2-1", stream=1)
    assert checker.violations() == [
        Finding(Violation.REUSED_ID, "1"),
        Finding(Violation.DUPLICATE_RESPONSE, "1"),
        Finding(Violation.UNKNOWN_ID, "9"),
        Finding(Violation.DUPLICATE_EVENT, "1-2"),
        Finding(Violation.GAP, "1-5"),
        Finding(Violation.FOREIGN_EVENT, "2-1"),
        Finding(Violation.NO_ANSWER, "2"),
    ]
    checker.gave_up(2)
    assert Finding(Violation.NO_ANSWER, "2") not in checker.violations()


def test_an_error_without_an_id_answers_the_pending_request() -> None:
    checker = SessionChecker()
    checker.request(jsonrpc.Request(1, "a"))
    checker.received(jsonrpc.ErrorResponse(None, -32700, "bad"))
    assert checker.violations() == []
    checker.received(jsonrpc.ErrorResponse(None, -32700, "bad"))
    assert checker.violations() == [Finding(Violation.UNKNOWN_ID, "None")]


def test_the_client_speaks_the_version_the_server_answers() -> None:
    link = Loopback(
        McpServer(ServerSettings(version="2025-06-18")), ClientCore("2025-11-25", "h:1")
    )
    assert isinstance(link.open(), Done)
    assert link.core.version == "2025-06-18"
    assert b"MCP-Protocol-Version: 2025-06-18" in link.wire[1][0]


def test_an_unknown_version_is_refused() -> None:
    core = ClientCore("2025-11-25", "h:1")
    call = Call(core, core.initialize())
    answer = jsonrpc.Response(1, {"protocolVersion": "2099-01-01"})
    call.take([Delivered(answer), Ended(clean=True)])
    assert call.next_step() == Fail(
        McpErrorCode.BAD_MESSAGE, "unknown protocol version '2099-01-01'"
    )
    assert core.checker.violations() == []
