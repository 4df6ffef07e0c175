"""``run_case`` end to end on loopback: the reference link, users' consumer programs, replays.

Each case is written as YAML, loaded and expanded like a scenario file, and run for real:
producer, proxy and consumer in one nursery. Consumer programs are this interpreter running
``tearline consume``, a one-liner, or ``programs/accept_all.py``.
"""

from __future__ import annotations

import itertools
import json

import pytest

from harness.judging.results import CaseResult
from harness.link.reference import prepared_link
from harness.running.case import run_case
from harness.running.external import command_for
from harness.scenario import Case, load_text
from reference_impl.report import MAX_DETAIL_CHARS
from tests.harness.conftest import PROGRAMS, PYTHON, fault_facts, one_case
from tests.harness.programs import own_request_sse

ENVELOPE_SSE = "{framing: sse, payload: envelope, envelope: {records: 20, chunk_records: 5}}"
ENVELOPE_LP = (
    "{framing: length-prefixed, payload: envelope, envelope: {records: 20, chunk_records: 5}}"
)
TRUNCATED = "ERR_ZPARQL_STREAM_TRUNCATED"


def scenario(
    link: str,
    expect: str,
    *,
    faults: str = "[]",
    command: list[str] | None = None,
    extra: str = "",
) -> Case:
    """One case: ``link`` (a YAML flow mapping), with a consumer ``command`` if given."""
    if command is not None:  # JSON is YAML: the argv goes in as a flow sequence
        link = link.removesuffix("}") + f", consumer: {{command: {json.dumps(command)}}}}}"
    text = (
        "name: t\n"
        "description: a runner test\n"
        f"link: {link}\n"
        f"faults: {faults}\n"
        f"expect: {expect}\n"
        f"{extra}"
    )
    return one_case(text)


def wire_offset(case: Case, frame: int, fraction: float) -> int:
    """Where ``frame`` at ``fraction`` falls on the case's expected wire."""
    start, end = prepared_link(case.scenario).spans[frame - 1]
    return start + int(fraction * (end - start))


def payload_end(case: Case) -> int:
    return prepared_link(case.scenario).spans[-1][1]


async def test_clean_envelope_passes() -> None:
    case = scenario(ENVELOPE_SSE, "{verdict: RESULT_VERIFIED, complete: true}")
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "pass",
        "RESULT_VERIFIED, complete=True, 6 accepted",  # header, 4 chunks, trailer
    )
    assert result.report is not None
    assert result.report.error_code is None
    assert result.timeline.faults == []
    size = prepared_link(case.scenario).stream_length
    down = result.timeline.end_of(1, "downstream")
    assert down is not None
    assert (down.written, down.read) == (size, size)
    # Either leg may end first: the consumer closes once it has seen the explicit end.
    assert sorted((e.direction, e.how) for e in result.timeline.ends) == [
        ("downstream", "eof"),
        ("upstream", "eof"),
    ]


async def test_rst_in_the_middle_of_a_chunk_fails_closed() -> None:
    case = scenario(
        ENVELOPE_SSE,
        f"{{verdict: {TRUNCATED}, complete: false}}",
        faults="[{kind: kill, how: rst, at: {frame: 3, fraction: 0.5}}]",
    )
    cut = wire_offset(case, 3, 0.5)
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "pass",
        "ERR_ZPARQL_STREAM_TRUNCATED, complete=False, 0 accepted",
    )
    assert result.report is not None
    assert result.report.error_code == TRUNCATED
    assert fault_facts(result.timeline) == [(1, "downstream", "kill", cut, "rst")]
    (end,) = result.timeline.ends
    assert (end.how, end.written) == ("rst", cut)


async def test_a_position_the_live_stream_never_reaches_is_inconclusive() -> None:
    case = scenario(
        ENVELOPE_SSE,
        "{verdict: RESULT_VERIFIED}",
        faults="[{kind: kill, at: {frame: 99}}]",
    )
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "inconclusive",
        "I5: kill (downstream, connection 1) never fired: at.frame: the stream had 6 frames, "
        "not 99; the consumer ended RESULT_VERIFIED (complete=True, 6 accepted)",
    )
    assert result.report is not None  # the stream passed untouched, and the consumer judged it


async def test_a_frame_after_an_earlier_cut_is_inconclusive_with_the_cut_named() -> None:
    case = scenario(
        ENVELOPE_SSE,
        "{verdict: RESULT_VERIFIED}",
        faults="[{kind: kill, at: {offset: 3}}, {kind: drop_frame, frame: 7}]",
    )
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "inconclusive",
        "I5: drop_frame (downstream, connection 1) never fired: the leg ended (rst) after 3 "
        "bytes, before the fault's place; the consumer ended ERR_ZPARQL_STREAM_TRUNCATED "
        "(complete=False, 0 accepted: rst)",
    )


async def test_a_length_fault_on_a_framing_without_lengths_is_an_error() -> None:
    case = scenario(
        ENVELOPE_SSE,
        "{verdict: RESULT_VERIFIED}",
        faults="[{kind: bogus_length, frame: 2, length: 5}]",
    )
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "error",
        "faults[0].frame: framing sse has no length prefix in frame 2",
    )


async def test_a_crashing_consumer_program_is_no_verdict_with_its_exit_status() -> None:
    crash = "import sys; print('partial output', file=sys.stderr); sys.exit(3)"
    case = scenario(ENVELOPE_SSE, "{verdict: RESULT_VERIFIED}", command=[PYTHON, "-c", crash])
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "no_verdict",
        "I4: no verdict: consumer exited 3 without a report; stderr: 'partial output'",
    )


async def test_a_consumer_printing_garbage_is_no_verdict_invalid_report() -> None:
    case = scenario(
        ENVELOPE_SSE, "{verdict: RESULT_VERIFIED}", command=[PYTHON, "-c", "print('hello')"]
    )
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "no_verdict",
        "I4: no verdict: consumer exited 0 with an invalid report "
        "(not JSON: Expecting value: line 1 column 1 (char 0))",
    )


def test_only_the_known_placeholders_are_replaced() -> None:
    command = ["prog", "{host}:{port}", "--as={framing}/{payload}", '{"x": 1}', "{other}", "{"]
    case = scenario(ENVELOPE_SSE, "{verdict: RESULT_VERIFIED}", command=command)
    argv, env = command_for(case.scenario.link, "127.0.0.1", 4321)
    assert argv == ["prog", "127.0.0.1:4321", "--as=sse/envelope", '{"x": 1}', "{other}", "{"]
    assert (env["TEARLINE_HOST"], env["TEARLINE_PORT"], env["TEARLINE_FRAMING"]) == (
        "127.0.0.1",
        "4321",
        "sse",
    )
    assert (env["TEARLINE_PAYLOAD"], env["TEARLINE_INCOMPLETE_MESSAGE_TIMEOUT_MS"]) == (
        "envelope",
        "1000",
    )


@pytest.mark.parametrize(
    ("accepted", "why"),
    [
        ("5", "'int' object is not iterable"),
        (
            "[{'sha256': 'ab', 'size': 2, 'connection': '1'}]",
            "accepted[0]: sha256 must be a string, size and connection (>= 1) integers",
        ),
        (
            "[{'sha256': 'ab', 'size': 2, 'connection': 0}]",
            "accepted[0]: sha256 must be a string, size and connection (>= 1) integers",
        ),
    ],
)
async def test_a_report_of_the_wrong_shape_is_an_invalid_report(accepted: str, why: str) -> None:
    report = f"{{'verdict': 'X', 'complete': True, 'accepted': {accepted}}}"
    shape = f"import json; print(json.dumps({report}))"
    case = scenario(ENVELOPE_SSE, "{verdict: RESULT_VERIFIED}", command=[PYTHON, "-c", shape])
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "no_verdict",
        f"I4: no verdict: consumer exited 0 with an invalid report ({why})",
    )


TOO_SMALL = (
    "{framing: length-prefixed, payload: messages, framing_options: {max_message_bytes: 10}}"
)


async def test_a_message_over_the_consumers_cap_fails_explicitly() -> None:
    # The producer sends what the scenario asks; only the consumer applies max_message_bytes.
    expect = "{verdict: FRAME_TOO_LARGE, complete: false, accepted_messages: 0}"
    result = await run_case(scenario(TOO_SMALL, expect))
    assert (result.outcome, result.diagnosis) == (
        "pass",
        "DISCARD_AND_RESET, complete=False, 0 accepted",
    )
    assert result.report is not None
    assert result.report.error_code == "FRAME_TOO_LARGE"


def test_the_stream_of_a_link_above_the_cap_still_has_a_length() -> None:
    # `to: end` sweeps need the producer's stream, which the consumer's cap does not limit.
    text = f"name: t\ndescription: d\nlink: {TOO_SMALL}\nexpect: {{complete: false}}\n"
    (loaded,) = load_text(text)
    assert prepared_link(loaded).stream_length == 5 * (4 + 64)


async def test_a_correct_external_consumer_passes() -> None:
    command = [
        PYTHON,
        "-m",
        "harness.cli",
        "consume",
        "--framing",
        "{framing}",
        "--payload",
        "{payload}",
        "--records",
        "20",
        "--chunk-records",
        "5",
        "--connect",
        "{host}:{port}",
        "--json",
    ]
    case = scenario(
        ENVELOPE_SSE,
        f"{{verdict: {TRUNCATED}, complete: false}}",
        faults="[{kind: kill, how: rst, at: {frame: 4, frame_offset: 10}}]",
        command=command,
    )
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "pass",
        "ERR_ZPARQL_STREAM_TRUNCATED, complete=False, 0 accepted",
    )
    # The same program's report is judged with the producer's log: I1 was checked for real.
    assert result.checks[0].ok is True


async def test_a_consumer_that_calls_a_cut_stream_complete_violates_i2() -> None:
    case = scenario(
        ENVELOPE_LP,
        f"{{verdict: {TRUNCATED}}}",
        faults="[{kind: kill, how: rst, at: {frame: 3, fraction: 0.5}}]",
        command=[PYTHON, str(PROGRAMS / "accept_all.py")],
    )
    cut = wire_offset(case, 3, 0.5)
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "violation",
        f"I2: complete result although kill cut connection 1 at byte {cut}: the consumer's "
        "side got 2 messages and no end",
    )


async def test_an_unreachable_producer_is_an_error() -> None:
    case = scenario(
        "{framing: length-prefixed, payload: messages, producer: {upstream: '127.0.0.1:1'}}",
        "{complete: true}",
    )
    result = await run_case(case)
    assert result.outcome == "error"
    assert result.diagnosis.startswith("connection 1: upstream 127.0.0.1:1 unreachable: ")


def _slices(result: CaseResult, direction: str = "downstream") -> list[int]:
    return [
        f.offset
        for f in result.timeline.faults
        if f.name == "slice" and f.direction == direction and f.offset is not None
    ]


async def test_a_seed_replays_the_same_random_faults() -> None:
    # Random slices on both directions: each fault's draws must not depend on which direction
    # trio happens to start first.
    case = scenario(
        "{framing: sse, payload: messages, messages: {count: 5, size_bytes: 64}}",
        "{verdict: MESSAGE_COMPLETE, complete: true, accepted_messages: 5}",
        faults="[{kind: slice, min_bytes: 20, max_bytes: 60},"
        " {kind: slice, direction: upstream, min_bytes: 5, max_bytes: 30}]",
    )
    runs = [await run_case(case, seed) for seed in (7, 7, 7, 8)]
    assert [(r.outcome, r.seed) for r in runs] == [("pass", 7)] * 3 + [("pass", 8)]
    for direction in ("downstream", "upstream"):
        first, *again, other = (_slices(r, direction) for r in runs)
        assert again == [first, first]
        assert other != first
    # Every piece is 20-60 bytes, as declared, and the last cut is inside the stream.
    cuts = [0, *_slices(runs[0])]
    assert all(20 <= b - a <= 60 for a, b in itertools.pairwise(cuts))
    assert cuts[-1] < prepared_link(case.scenario).stream_length
    # The case's own seed (from its id) replays too.
    mine, mine_again = await run_case(case), await run_case(case)
    assert mine.seed == mine_again.seed == case.seed
    assert _slices(mine) == _slices(mine_again)


async def test_an_oversized_report_is_cut_before_it_reaches_the_judge_and_the_reports() -> None:
    huge = (
        "import json; print(json.dumps({'verdict': 'ERR_ZPARQL_STREAM_TRUNCATED', "
        "'complete': False, 'detail': 'x' * 3_000_000}))"
    )
    case = scenario(ENVELOPE_SSE, "{complete: false}", command=[PYTHON, "-c", huge])
    result = await run_case(case)
    assert result.report is not None
    assert len(result.report.detail) == MAX_DETAIL_CHARS + 1
    i1 = next(check for check in result.checks if check.name == "I1")
    assert i1.evidence.endswith(f"(detail cut to {MAX_DETAIL_CHARS} of 3000000 characters)")


async def test_a_report_line_past_the_limit_is_called_too_long_not_invalid_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #8: a report line longer than the limit was kept as its last bytes only, and
    diagnosed as 'not JSON' (the newline after it took the byte that would have shown it)."""
    monkeypatch.setattr("harness.running.external.MAX_REPORT_BYTES", 1000)
    report = {"verdict": TRUNCATED, "complete": False, "detail": "x" * 5000}
    line = json.dumps(report) + "\n"
    program = f"import sys; sys.stdout.write({line!r})"
    case = scenario(ENVELOPE_SSE, "{complete: false}", command=[PYTHON, "-c", program])
    result = await run_case(case)
    assert (result.outcome, result.report) == ("no_verdict", None)
    assert result.diagnosis == (
        f"I4: no verdict: consumer exited 0 with a report line over 1000 bytes ({len(line)} "
        "bytes printed in all)"
    )


MESSAGES_SSE = "{framing: sse, payload: messages}"
#: what h11 adds to its response head for a request with ``Connection: close``
CLOSE_HEADER = len(b"connection: close\r\n")


async def test_faults_land_on_the_live_stream_of_a_consumer_with_its_own_request() -> None:
    # The measured case: a longer response head moves every frame 19 bytes later;
    # the kill lands there (a dry run would put it 19 bytes early and still call it faithful).
    case = scenario(
        MESSAGES_SSE,
        "{complete: false, accepted_messages: 2}",
        faults="[{kind: kill, how: rst, at: {frame: 3, fraction: 0.5}}]",
        command=[PYTHON, str(PROGRAMS / "own_request_sse.py")],
    )
    result = await run_case(case)
    (kill,) = result.timeline.faults
    assert kill.offset == wire_offset(case, 3, 0.5) + CLOSE_HEADER
    assert (result.outcome, result.checks[0].ok) == ("pass", True)


async def test_a_frame_fault_removes_exactly_its_frame_behind_a_longer_head() -> None:
    case = scenario(
        MESSAGES_SSE,
        "{complete: true, accepted_messages: 4}",
        faults="[{kind: drop_frame, frame: 2}]",
        command=[PYTHON, str(PROGRAMS / "own_request_sse.py")],
    )
    result = await run_case(case)
    known = prepared_link(case.scenario)
    assert result.report is not None
    got = [a.sha256 for a in result.report.accepted]
    assert got == [d for i, d in enumerate(known.digests()) if i != 1]
    (drop,) = result.timeline.faults
    assert drop.offset == known.spans[1][0] + CLOSE_HEADER
    # Nothing numbers the messages: no consumer can see the one dropped on the way, so
    # calling four of five complete is no breach of I2, and the case says so.
    assert (result.outcome, result.checks[0].ok, result.checks[1].ok) == ("pass", True, True)
    assert result.undetectable == (
        "drop_frame: undetectable by this protocol (messages: loss: nothing numbers the messages)",
    )


async def test_the_requests_end_is_where_this_consumers_request_ends() -> None:
    case = scenario(
        MESSAGES_SSE,
        "{complete: true, accepted_messages: 5}",
        faults="[{kind: kill, how: half, direction: upstream, at: {request_end: true}}]",
        command=[PYTHON, str(PROGRAMS / "own_request_sse.py")],
    )
    result = await run_case(case)
    (kill,) = result.timeline.faults
    assert kill.offset == len(own_request_sse.REQUEST)
    assert kill.offset != len(prepared_link(case.scenario).request)
    assert result.outcome == "pass"
