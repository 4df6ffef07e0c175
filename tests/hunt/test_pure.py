"""The hunt's pure parts: plans in words, the expectation from the reference's report, the
normalised diagnosis, a plan's standing, and the scenario file."""

from __future__ import annotations

import dataclasses

from harness.faults import Corrupt, Kill, Reconnect, Split, Stall
from harness.faults.position import Position
from harness.hunt.diagnosis import (
    LATE,
    NO_RECONNECT,
    Standing,
    classify,
    differences,
    effect,
    failure_key,
    is_failure,
    reference_standing,
)
from harness.hunt.plan import (
    DEFAULT_DEADLINE_MS,
    IDLE_WAIT_MS,
    SHORT_DEADLINE_MS,
    Plan,
    deadline_for,
    describe,
    expect_from,
    scenario_of,
)
from harness.hunt.scenario_file import TOP_LEVEL, document, dump
from harness.judging.results import CaseResult, Check, Grade, Outcome
from harness.scenario import ConsumerConfig, CountRange, Expect, Link, MessagesConfig, load_text
from reference_impl.framing import FramingName
from reference_impl.payload import PayloadName
from reference_impl.report import Accepted, ConsumerReport
from tests.hunt.fakes import CLEAN, EXPECT, result

LINK = Link(
    framing=FramingName.NDJSON,
    payload=PayloadName.MESSAGES,
    messages=MessagesConfig(count=1, size_bytes=16),
)
PLAN = Plan(LINK, (Kill(at=Position(frame=1, frame_offset=3), how="fin"),))


def test_a_plan_in_one_line() -> None:
    assert describe(PLAN) == "ndjson/messages 1x16B: kill fin at frame 1 + 3 B"
    texts = Link(
        framing=FramingName.SSE,
        payload=PayloadName.MESSAGES,
        messages=MessagesConfig(texts=("\u2028",)),
    )
    timed = ConsumerConfig(incomplete_message_timeout_ms=500)
    stall = Stall(at=Position(after_ms=500), duration_ms=None, connection=0)
    plan = Plan(dataclasses.replace(texts, consumer=timed), (stall,))
    assert describe(plan) == (
        "sse/messages texts ['\\u2028'] (incomplete_message_timeout_ms=500): "
        "stall at 500 ms duration_ms=none every connection"
    )


def test_only_a_stall_without_end_gets_the_long_deadline() -> None:
    assert deadline_for(PLAN.faults) == SHORT_DEADLINE_MS
    forever = Stall(at=Position(frame=1), duration_ms=None, connection=0)
    assert deadline_for((forever,)) == DEFAULT_DEADLINE_MS
    again = (forever, Reconnect(at=Position(frame=1)))
    assert deadline_for(again) == DEFAULT_DEADLINE_MS + IDLE_WAIT_MS


def test_the_expectation_is_what_the_reference_concluded() -> None:
    assert expect_from(CLEAN) == EXPECT


def test_differences_are_words_without_numbers() -> None:
    more = ConsumerReport("MESSAGE_COMPLETE", True, accepted=CLEAN.accepted * 2)
    assert differences(more, EXPECT) == ["claims complete", "more messages"]
    cut = ConsumerReport("STALE_PARTIAL_BUFFER", False, error_code="FRAME_TRUNCATED")
    assert differences(cut, EXPECT) == ["verdict", "fewer messages"]
    named = ConsumerReport("X", False, error_code="MESSAGE_COMPLETE", accepted=CLEAN.accepted)
    assert differences(named, EXPECT) == []  # expect.verdict matches the error code as well


def test_the_failure_key() -> None:
    broken = (Check("I1", False, "message 3 never sent"), Check("I2", True, ""))
    assert failure_key(result(Outcome.VIOLATION, checks=broken), EXPECT) == "violation: I1"
    assert failure_key(result(Outcome.NO_VERDICT, None), EXPECT) == "no_verdict: I4"
    cut = ConsumerReport("STALE_PARTIAL_BUFFER", False, accepted=CLEAN.accepted[:1])
    assert failure_key(result(Outcome.FAIL, cut), EXPECT) == "fail: verdict, fewer messages"


def test_a_failed_grade_or_an_ungraded_failure_is_a_failure() -> None:
    assert is_failure(result(Outcome.VIOLATION))
    assert is_failure(result(Outcome.FAIL, grade=Grade.FAILED))
    assert not is_failure(result(Outcome.FAIL, grade=Grade.NON_STRICT))
    assert is_failure(result(Outcome.FAIL, grade=Grade.NON_STRICT), strict=True)
    assert not is_failure(result(Outcome.INCONCLUSIVE))


def test_the_reference_run_decides_invalid_plans_and_reference_problems() -> None:
    assert reference_standing(PLAN, result()) is None
    invalid = reference_standing(PLAN, result(Outcome.INCONCLUSIVE))
    assert invalid is not None and invalid.standing is Standing.INVALID
    bad = reference_standing(PLAN, result(Outcome.VIOLATION, checks=(Check("I1", False, ""),)))
    assert bad is not None and (bad.standing, bad.key) == (Standing.REFERENCE, "violation: I1")
    hung = reference_standing(PLAN, result(Outcome.NO_VERDICT, None))
    assert hung is not None and hung.standing is Standing.REFERENCE


def test_classify() -> None:
    ok = classify(PLAN, result(), result(), EXPECT, CLEAN)
    assert ok.standing is Standing.PASS and ok.effect == 0.0
    fused = result(Outcome.VIOLATION, checks=(Check("I1", False, ""),))
    bad = classify(PLAN, result(), fused, EXPECT, CLEAN)
    assert (bad.standing, bad.key) == (Standing.FAILURE, "violation: I1")
    harness = classify(PLAN, result(), result(Outcome.ERROR, None), EXPECT)
    assert harness.standing is Standing.INVALID


def test_after_an_rst_a_non_strict_grade_passes_even_strictly() -> None:
    raced = result(Outcome.FAIL, grade=Grade.NON_STRICT)
    rst = Plan(LINK, (Kill(at=Position(frame=1)),))
    assert classify(rst, result(), raced, EXPECT, strict=True).standing is Standing.PASS
    assert classify(PLAN, result(), raced, EXPECT, strict=True).standing is Standing.FAILURE
    assert classify(PLAN, result(), raced, EXPECT).standing is Standing.PASS


def test_failing_closed_where_the_reference_reconnected_is_no_failure() -> None:
    reconnected = result(connections=2)
    refused = ConsumerReport("ERR_ZPARQL_STREAM_TRUNCATED", False, "CONNECTION_RESET")
    alone = result(Outcome.FAIL, refused, grade=Grade.FAILED)
    judged = classify(PLAN, reconnected, alone, EXPECT)
    assert (judged.standing, judged.key) == (Standing.INVALID, NO_RECONNECT)
    # an invariant it broke on its one connection is its own
    fused = result(Outcome.VIOLATION, checks=(Check("I1", False, ""),))
    assert classify(PLAN, reconnected, fused, EXPECT).standing is Standing.FAILURE


def test_the_effect_of_the_faults_on_the_reference() -> None:
    assert effect(CLEAN, CLEAN) == 0.0
    cut = ConsumerReport("STALE_PARTIAL_BUFFER", False, accepted=CLEAN.accepted[:1])
    assert effect(CLEAN, cut) == 1.0 + 2 / 3
    assert effect(None, cut) == 0.0


def test_a_scenario_file_in_the_documented_order_without_defaults() -> None:
    faults = (
        Split(at=Position(utf8_char=2, char_byte=2)),
        Corrupt(at=Position(match='"text"'), text="\u2028"),
    )
    plan = Plan(LINK, faults)
    expect = Expect(verdict="MESSAGE_COMPLETE", complete=False, accepted_messages=1)
    scenario = scenario_of(plan, expect, seed=9, name="hunted-x", source="tearline hunt seed 9")
    written = document(scenario)
    assert list(written) == [k for k in TOP_LEVEL if k in written]
    assert written["faults"] == [
        {"kind": "split", "at": {"utf8_char": 2, "char_byte": 2}},
        {"kind": "corrupt", "at": {"match": '"text"'}, "text": "\u2028"},
    ]
    assert written["link"] == {
        "framing": "ndjson",
        "payload": "messages",
        "messages": {"count": 1, "size_bytes": 16},
    }
    assert written["deadline_ms"] == 6000 and "exclusive" not in written
    text = dump([scenario], "found by a test\nsecond line")
    assert text.startswith("# found by a test\n# second line\nname: hunted-x\n")
    assert "\\L" in text  # U+2028 escaped, never raw (a YAML reader would take it for a break)
    (loaded,) = load_text(text, "hunted.yaml")
    assert dataclasses.replace(loaded, origin=None) == scenario


def test_several_scenarios_are_a_list() -> None:
    one = scenario_of(PLAN, EXPECT, seed=1, name="a")
    two = scenario_of(PLAN, EXPECT, seed=1, name="b")
    assert [s.name for s in load_text(dump([one, two]), "two.yaml")] == ["a", "b"]


def test_accepted_counts_carry_over_at_most_after_an_rst() -> None:
    report = ConsumerReport("MESSAGE_COMPLETE", False, accepted=(Accepted.of(b"x"),))
    assert expect_from(report).accepted_messages == 1
    rst = (Kill(at=Position(frame=1)),)
    assert expect_from(report, rst).accepted_messages == CountRange(max=1)
    assert expect_from(report, PLAN.faults).accepted_messages == 1  # a FIN loses nothing


def killed(*, first_byte_s: float = 0.1, checks: tuple[Check, ...] = ()) -> CaseResult:
    """A consumer run killed at ``PLAN``'s deadline, its first byte at ``first_byte_s``."""
    return result(
        Outcome.NO_VERDICT,
        None,
        checks=(Check("I4", False, "no verdict within the case deadline"), *checks),
        first_byte_s=first_byte_s,
        duration_s=SHORT_DEADLINE_MS / 1000,
        connections=0 if first_byte_s < 0 else 1,
    )


def test_a_hang_after_the_plan_tested_the_consumer_is_a_failure() -> None:
    reference = result(duration_s=0.6)
    judged = classify(PLAN, reference, killed(), EXPECT, CLEAN)
    assert (judged.standing, judged.key) == (Standing.FAILURE, "no_verdict: I4")


def test_a_consumer_killed_before_the_plan_tested_it_is_no_failure() -> None:
    """Regression: on a loaded machine (load average 30 on 2 cores) the reference consumer
    run as a program (``tearline consume``) took longer than the 6 s deadline to start; the
    kill counted as a hang of the plan and was not confirmed, so a hunt of the reference found
    "split at frame 1" (``/tmp/bench_hunt3.log``). Killed before every fault fired, before it
    connected, or with less time after its first byte than the reference needed, the plan did
    not test the consumer."""
    reference = result(duration_s=0.6)
    unfired = Check("I5", False, "kill (downstream, connection 1) never fired")
    for late in (killed(checks=(unfired,)), killed(first_byte_s=-1), killed(first_byte_s=4.5)):
        judged = classify(PLAN, reference, late, EXPECT, CLEAN)
        assert (judged.standing, judged.key) == (Standing.INVALID, LATE)
    # the time it had after its first byte: 6 - 4.3 = 1.7 s >= 0.6 s the reference took + 1 s
    in_time = classify(PLAN, reference, killed(first_byte_s=4.3), EXPECT, CLEAN)
    assert in_time.standing is Standing.FAILURE


def test_a_hang_counts_from_the_consumers_start_not_the_proxys() -> None:
    """The deadline counts from the program's first connection: its first byte 4.5 s after
    the proxy started but 1.5 s after it connected left it 4.5 s, enough to count as a hang."""
    reference = result(duration_s=0.6)
    late_start = dataclasses.replace(killed(first_byte_s=4.5), startup_s=3.0)
    judged = classify(PLAN, reference, late_start, EXPECT, CLEAN)
    assert (judged.standing, judged.key) == (Standing.FAILURE, "no_verdict: I4")


def test_a_hang_on_the_clean_link_is_the_consumer_s_however_late() -> None:
    clean = Plan(LINK, ())
    judged = classify(clean, result(duration_s=0.6), killed(first_byte_s=-1), EXPECT, CLEAN)
    assert (judged.standing, judged.key) == (Standing.FAILURE, "no_verdict: I4")
