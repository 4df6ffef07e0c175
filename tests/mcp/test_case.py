"""MCP sessions as cases: faults on the session's exchanges through the proxy, the reference
server's modes, judged from the wire (M1-M3, I5, the expectation)."""

from __future__ import annotations

import pytest

from harness.cli.main import build_parser, main
from harness.cli.scenario import targeted_cases
from harness.config.issues import ScenarioError
from harness.consumers.catalogue import by_name
from harness.evidence.timeline import Timeline
from harness.judging.mcp import ClientOutcome, McpObservation, judge_session
from harness.judging.results import CaseResult, Grade, Outcome
from harness.matrix.sampling import fits, unsupported
from harness.running.case import run_case
from harness.scenario import Case, Scenario, expand, load_text
from harness.scenario.cases import StreamShape
from harness.scenario.model import SessionExpect

LINK = """
  link:
    framing: sse
    payload: mcp
    mcp: {{version: "{version}", steps: 3, retry_ms: 10{extra}}}
"""


def case_text(expect: str, faults: str = "", version: str = "2025-11-25", extra: str = "") -> str:
    head = "- name: t\n  description: an MCP session\n  deadline_ms: 30000\n"
    return (
        head
        + LINK.format(version=version, extra=extra)
        + faults
        + f"  expect:\n    session: {expect}\n"
    )


def no_shape(_: Scenario) -> StreamShape:
    raise AssertionError("an MCP session has no stream to measure")


def one_case(text: str) -> Case:
    (scenario,) = load_text(text, "mcp-test.yaml")
    (case,) = expand(scenario, no_shape)
    return case


async def run(text: str) -> CaseResult:
    return await run_case(one_case(text))


def checks(result: CaseResult) -> dict[str, bool | None]:
    return {c.name: c.ok for c in result.checks}


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_a_clean_session_passes(version: str) -> None:
    result = await run(case_text("{outcome: answered}", version=version, extra=", calls: 2"))
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert result.diagnosis == "answered; findings none; 2 tool run(s)"
    assert checks(result) == {
        "M1": True,
        "M2": True,
        "M3": True,
        "M4": True,
        "I5": True,
        "expect": True,
    }


KILL_CALL = "  faults:\n    - {kind: kill, connection: 4, at: {frame: 3}}\n"


async def test_a_cut_tool_call_is_resumed_and_answered_once() -> None:
    result = await run(case_text("{outcome: answered}", KILL_CALL))
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert [f.connection for f in result.timeline.faults] == [4]
    methods = [bytes(result.timeline.leg(n, "upstream").data)[:4] for n in (4, 5)]
    assert methods == [b"POST", b"GET "]  # the resume: GET with Last-Event-ID


async def test_a_cut_before_any_event_id_is_a_typed_error() -> None:
    faults = "  faults:\n    - {kind: kill, connection: 4, at: {frame: 1, fraction: 0.5}}\n"
    result = await run(case_text("{outcome: error, error: STREAM_CUT}", faults))
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert checks(result)["M3"] is True  # and the tool ran once: no retry ran it again


async def test_a_duplicated_event_is_found_on_the_wire() -> None:
    faults = "  faults:\n    - {kind: duplicate_frame, connection: 4, frame: 2}\n"
    result = await run(case_text("{outcome: answered, findings: [DUPLICATE_EVENT]}", faults))
    assert result.outcome is Outcome.PASS, result.diagnosis
    assert result.diagnosis == "answered; findings ['DUPLICATE_EVENT:3-1']; 1 tool run(s)"


async def test_a_dropped_event_is_a_gap() -> None:
    faults = "  faults:\n    - {kind: drop_frame, connection: 4, frame: 2}\n"
    result = await run(case_text("{outcome: answered}", faults))
    assert result.outcome is Outcome.FAIL
    assert "the wire showed ['GAP:3-2']" in result.diagnosis


@pytest.mark.parametrize(
    ("mode", "expect"),
    [
        ("lose-final-response", "{outcome: error, error: STREAM_CUT}"),
        ("forget-session", "{outcome: error, error: SESSION_LOST, executions: 0}"),
        ("drop-on-replay", "{outcome: answered, findings: [GAP]}"),
        (
            "replay-other-streams",
            "{outcome: answered, findings: [FOREIGN_EVENT, DUPLICATE_RESPONSE, FOREIGN_EVENT, "
            "DUPLICATE_RESPONSE]}",
        ),
    ],
)
async def test_the_servers_modes(mode: str, expect: str) -> None:
    extra = f", server_mode: {mode}, close_after_events: 3"
    result = await run(case_text(expect, extra=extra))
    assert result.outcome is Outcome.PASS, result.diagnosis


async def test_a_stall_ends_in_stalled_not_a_hang() -> None:
    faults = "  faults:\n    - {kind: stall, connection: 4, at: {frame: 2}, duration_ms: 3000}\n"
    text = case_text("{outcome: error, error: STALLED}", faults).replace(
        "  faults:", "    consumer: {idle_timeout_ms: 200}\n  faults:"
    )
    result = await run(text)
    assert result.outcome is Outcome.PASS, result.diagnosis


async def test_a_fault_that_never_fires_is_inconclusive() -> None:
    faults = "  faults:\n    - {kind: kill, connection: 9, at: {frame: 1}}\n"
    result = await run(case_text("{outcome: answered}", faults))
    assert result.outcome is Outcome.INCONCLUSIVE


def observation(outcome: ClientOutcome | None, executions: int = 1) -> McpObservation:
    return McpObservation(Timeline(), (), calls=1, executions=executions, outcome=outcome)


def test_an_answer_the_wire_never_carried_is_a_violation() -> None:
    judged, _ = judge_session(SessionExpect(), observation(ClientOutcome(1)))
    assert judged.outcome is Outcome.VIOLATION
    assert (
        judged.diagnosis
        == "M2: the client says 1 tool call(s) returned; the wire delivered 0 response(s)"
    )


def test_a_tool_run_twice_is_a_violation_whatever_is_expected() -> None:
    judged, _ = judge_session(
        SessionExpect(outcome="error", executions=2), observation(ClientOutcome(0, "X"), 2)
    )
    assert judged.outcome is Outcome.VIOLATION
    assert judged.diagnosis == "M3: the tool ran 2 times for 1 call(s)"


def test_a_client_that_says_nothing_hung() -> None:
    obs = McpObservation(Timeline(), (), 1, 1, None, problem="killed at the deadline")
    judged, _ = judge_session(SessionExpect(), obs)
    assert judged.outcome is Outcome.NO_VERDICT
    assert judged.diagnosis == "M1: the client hung: killed at the deadline"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("{outcome: answered, error: STALLED}", "expect.session.error"),
        ("{outcome: answered, findings: [NO_ANSWER]}", "expect.session.findings[0]"),
    ],
)
def test_what_a_session_expectation_refuses(text: str, key: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_text(case_text(text), "mcp-test.yaml")
    assert [issue.key_path for issue in caught.value.issues] == [key]


SDK = '    consumer: {function: "harness.adapters.mcp_sdk:call_tools"}\n'


async def test_the_sdk_adapter_is_graded_strict_on_a_clean_session() -> None:
    text = case_text("{outcome: answered}").replace("  expect:", SDK + "  expect:")
    result = await run(text)
    assert (result.outcome, result.grade) == (Outcome.PASS, Grade.STRICT), result.diagnosis


async def test_the_sdk_adapter_that_waits_for_ever_is_killed_and_failed() -> None:
    """python-sdk 1.x's call_tool waits for ever when the stream ends before any event."""
    text = case_text("{outcome: error}", extra=", close_after_events: 0")
    text = text.replace("  expect:", SDK + "  expect:").replace(
        "deadline_ms: 30000", "deadline_ms: 3000"
    )
    result = await run(text)
    assert (result.outcome, result.grade) == (Outcome.NO_VERDICT, Grade.FAILED)
    assert result.diagnosis == "M1: the client hung: no outcome within the case deadline (3000 ms)"


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (("framing: sse", "framing: ndjson"), "link.framing"),
        (
            ("    payload: mcp\n", "    payload: mcp\n    producer: {upstream: '127.0.0.1:9'}\n"),
            "link.producer",
        ),
        (
            ("    payload: mcp\n", "    payload: mcp\n    consumer: {command: [cat]}\n"),
            "link.consumer.command",
        ),
        (("    payload: mcp\n", "    payload: mcp\n    tls: true\n"), "link.tls"),
        (("    session: {outcome: answered}", "    verdict: MESSAGE_COMPLETE"), "expect.session"),
    ],
)
def test_what_an_mcp_link_refuses(change: tuple[str, str], key: str) -> None:
    text = case_text("{outcome: answered}").replace(*change)
    with pytest.raises(ScenarioError) as caught:
        load_text(text, "mcp-test.yaml")
    assert [issue.key_path for issue in caught.value.issues] == [key]


def test_which_clients_run_which_sessions() -> None:
    mcp, httpx = by_name("mcp-python"), by_name("httpx-sse")
    assert mcp is not None and httpx is not None
    plain = one_case(case_text("{outcome: answered}"))
    placed = one_case(case_text("{outcome: answered}", KILL_CALL))
    assert (fits(mcp, plain), fits(mcp, placed), fits(httpx, plain)) == (True, False, False)
    assert unsupported(placed) == "places a fault by the reference client's connection numbers"


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        ([], 23),
        (["--consumer", "cat"], 0),  # a consumer program runs streams
        (["--tls"], 0),
        (["--consumer-function", "harness.adapters.mcp_sdk:call_tools"], 23),
        (["--consumer-function", "harness.adapters.httpx_sse_client:consume"], 0),
    ],
)
def test_which_sessions_the_command_line_retargets(options: list[str], kept: int) -> None:
    args = build_parser().parse_args(["run", "scenarios/agent-mcp", *options])
    cases = targeted_cases(args)
    assert len(cases) == kept
    function = options[1] if kept and options else None
    assert {c.scenario.link.consumer.function for c in cases} <= {function}


async def test_the_sdk_adapter_does_not_replace_a_lost_session() -> None:
    """python-sdk 1.x raises on a 404 instead of starting a new session (M4)."""
    text = case_text("{outcome: error, executions: 0}", extra=", server_mode: forget-session")
    result = await run(text.replace("  expect:", SDK + "  expect:"))
    assert (result.outcome, result.grade) == (Outcome.VIOLATION, Grade.FAILED), result.diagnosis
    assert result.diagnosis.startswith("M4: after a 404 to ")


def test_the_library_s_sessions_validate_with_their_faults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``tearline validate`` (and ``run``, which prints the same warnings) reads a session's
    faults without asking its payload what it can show: a session has no stream payload."""
    assert main(["validate", "scenarios/agent-mcp/"]) == 0
    out, err = capsys.readouterr()
    assert (out.splitlines()[-1], err) == ("ok: 23 cases", "")
