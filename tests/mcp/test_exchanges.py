"""Faults that name a session's exchange by its request (``request:``): the selector's rules,
the live session's exchanges (pure, fed as the proxy feeds them), and cases where the fault
lands on that exchange whatever connection it came on, with the reference client and the SDK."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.issues import ScenarioError
from harness.consumers.catalogue import by_name
from harness.errors import FieldError
from harness.faults.exchange import ExchangeSelector
from harness.judging.results import Grade, Outcome
from harness.link.exchanges import SessionExchanges
from harness.matrix.sampling import fits
from harness.scenario.loader import load_faults_file
from reference_impl.framing.http1 import Received
from reference_impl.mcp.client import ClientCore
from reference_impl.mcp.server import McpServer
from reference_impl.mcp.settings import ServerSettings
from reference_impl.mcp.wire import ServerExchange
from tests.mcp.test_case import case_text, one_case, run


class Session:
    """A reference client and server whose exchanges go through ``SessionExchanges``, one
    connection each, the request fed ``step`` bytes at a time."""

    def __init__(self, step: int = 0, close_after_events: int | None = None) -> None:
        self.core = ClientCore("2025-11-25", "127.0.0.1:1")
        settings = ServerSettings(close_after_events=close_after_events)
        self.server = McpServer(settings)
        self.seen = SessionExchanges()
        self.step = step
        self.number = 0
        #: for each connection: at which read its request was whole (None: never)
        self.resolved_at: list[int | None] = []
        self.requests: list[bytes] = []

    def exchange(self, request: bytes) -> bytes:
        self.number += 1
        self.requests.append(request)
        reads = _chunks(request, self.step)
        flags = [self.seen.observe("upstream", self.number, r) for r in reads]
        self.resolved_at.append(flags.index(True) if True in flags else None)
        got = ServerExchange().receive_data(request)
        assert isinstance(got, Received)
        answer = b"".join(ServerExchange().pieces(self.server.handle(got)))
        self.seen.observe("downstream", self.number, answer)
        return answer

    def open(self) -> None:
        _, data = self.core.post(self.core.initialize())
        self.exchange(data)
        self.core.session_id = "1"
        self.exchange(self.core.post(self.core.initialized())[1])

    def call(self) -> None:
        self.exchange(self.core.post(self.core.call_tool("work", {"steps": 2}))[1])


def _chunks(data: bytes, step: int) -> list[bytes]:
    if not step:
        return [data]
    return [data[i : i + step] for i in range(0, len(data), step)]


@pytest.mark.parametrize("step", [0, 1, 7])
def test_a_request_is_placed_once_whole_at_any_split(step: int) -> None:
    session = Session(step)
    session.open()
    session.call()
    # each request is placed by the read that completes it, never before, never after
    assert session.resolved_at == [len(_chunks(r, step)) - 1 for r in session.requests]
    assert [session.seen.exchanges[n].methods for n in (1, 2, 3)] == [
        ("initialize",),
        ("notifications/initialized",),
        ("tools/call",),
    ]
    assert session.seen.exchanges[3].ids == (2,)


def test_selectors_by_method_id_nth_and_http() -> None:
    session = Session()
    session.open()
    session.call()
    session.call()
    seen = session.seen

    def chosen(**given: object) -> list[int]:
        selector = ExchangeSelector(**given)  # type: ignore[arg-type]
        return [n for n in seen.order if seen.selects(selector, n)]

    assert chosen(method="tools/call") == [3]
    assert chosen(method="tools/call", nth=2) == [4]
    assert chosen(method="tools/call", nth=3) == []
    assert chosen(method="notifications/initialized") == [2]
    assert chosen(id=3) == [4]
    assert chosen(id="3") == []  # a string id is not a number id
    assert chosen(http="GET") == []


def test_a_resume_is_matched_to_the_stream_it_resumes() -> None:
    session = Session(close_after_events=2)  # each tool call's stream: priming, one event
    session.open()
    session.call()
    session.exchange(session.core.resume("2-1")[1])  # stream 2: the tool call's
    session.exchange(session.core.resume("2-2")[1])  # an event the first resume carried
    seen = session.seen
    first, second = seen.exchanges[4], seen.exchanges[5]
    assert (first.root, first.resume, second.root, second.resume) == (3, 1, 3, 2)
    resume_2 = ExchangeSelector(method="tools/call", resume=2)
    assert [n for n in seen.order if seen.selects(resume_2, n)] == [5]
    itself = ExchangeSelector(method="tools/call")
    assert [n for n in seen.order if seen.selects(itself, n)] == [3]


def test_a_get_that_resumes_nothing_known_is_no_resume_of_anything() -> None:
    session = Session()
    session.open()
    session.exchange(session.core.resume("9-9")[1])
    assert session.seen.exchanges[3].root is None
    assert not session.seen.selects(ExchangeSelector(http="GET"), 3)


def test_bytes_that_are_no_http_request_place_nothing() -> None:
    seen = SessionExchanges()
    assert seen.observe("upstream", 1, b"\x16\x03\x01 not http\r\n\r\n") is False
    assert seen.observe("upstream", 1, b"POST /mcp HTTP/1.1\r\n\r\n") is False
    assert seen.exchanges == {}


@pytest.mark.parametrize(
    ("given", "key"),
    [({}, ""), ({"method": "tools/call", "id": 1}, ""), ({"method": "x", "nth": 0}, "nth")],
)
def test_what_a_selector_refuses(given: dict[str, object], key: str) -> None:
    with pytest.raises(FieldError) as caught:
        ExchangeSelector(**given)  # type: ignore[arg-type]
    assert caught.value.path == ((key,) if key else ())


def test_a_fault_names_a_connection_or_a_request_not_both() -> None:
    faults = (
        "  faults:\n    - {kind: kill, connection: 4, request: {method: tools/call},"
        " at: {frame: 3}}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        one_case(case_text("{outcome: answered}", faults))
    assert [i.key_path for i in caught.value.issues] == ["faults[0].request"]


def test_a_request_is_named_only_on_an_mcp_session() -> None:
    text = (
        "- name: t\n  description: d\n  link: {framing: sse, payload: tokens}\n"
        "  faults:\n    - {kind: kill, request: {method: tools/call}, at: {frame: 3}}\n"
        "  expect: {verdict: COMPLETE_EXPLICIT, complete: true}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        one_case(text)
    assert [i.key_path for i in caught.value.issues] == ["faults[0].request"]


def test_a_faults_file_names_no_request(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - {kind: kill, request: {method: tools/call}, at: {frame: 3}}\n")
    with pytest.raises(ScenarioError) as caught:
        load_faults_file(path)
    assert [(i.line, i.key_path) for i in caught.value.issues] == [(2, "faults[0].request")]


def faults(*lines: str) -> str:
    return "  faults:\n" + "".join(f"    - {line}\n" for line in lines)


async def test_a_fault_lands_on_the_named_tool_call() -> None:
    text = case_text(
        "{outcome: answered}",
        faults("{kind: kill, request: {method: tools/call, nth: 2}, at: {frame: 3}}"),
        extra=", calls: 2",
    )
    result = await run(text)
    assert result.outcome is Outcome.PASS, result.diagnosis
    # 1 initialize, 2 the notification, 3 tools/list, 4 the first call, 5 the second
    assert [(f.name, f.connection) for f in result.timeline.faults] == [("kill", 5)]


async def test_a_fault_lands_on_the_named_resume() -> None:
    text = case_text(
        "{outcome: answered}",
        faults(
            "{kind: kill, request: {method: tools/call}, at: {frame: 3}}",
            "{kind: kill, request: {id: 3, resume: 1}, at: {frame: 1, fraction: 0.5}}",
        ),
    )
    result = await run(text)
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert [f.connection for f in result.timeline.faults] == [4, 5]  # then resume 2 answers
    assert bytes(result.timeline.leg(6, "upstream").data).startswith(b"GET ")


async def test_a_named_exchange_that_never_comes_is_inconclusive() -> None:
    text = case_text(
        "{outcome: answered}", faults("{kind: kill, request: {id: 9}, at: {frame: 3}}")
    )
    result = await run(text)
    assert result.outcome is Outcome.INCONCLUSIVE
    assert result.diagnosis == "I5: kill (downstream, request id 9) never fired"


SDK = "    consumer: {function: 'harness.adapters.mcp_sdk:call_tools'}\n"


async def test_the_sdk_s_tool_call_is_found_whatever_its_connection() -> None:
    text = case_text(
        "{outcome: answered}",
        faults("{kind: duplicate_frame, request: {method: tools/call}, frame: 3}"),
    ).replace("  faults:", SDK + "  faults:")
    case = one_case(text)
    adapter = by_name("mcp-python")
    assert adapter is not None and fits(adapter, case)  # a connection number would not
    result = await run(text)
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert result.grade is Grade.STRICT
    (fired,) = result.timeline.faults
    body = bytes(result.timeline.leg(fired.connection, "upstream").data)
    assert b'"method":"tools/call"' in body.replace(b" ", b"")
