"""Grades of foreign consumers (``harness/judging/grades.py``): one test per rule."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from harness.consumers.catalogue import ADAPTERS, hands_on_transport, lacks
from harness.consumers.catalogue import NEEDS as CATALOGUE_NEEDS
from harness.evidence.connection import WireConnection
from harness.evidence.timeline import Timeline
from harness.judging.grades import Circumstances, grade
from harness.judging.judge import Judgement, Observation, judge
from harness.judging.needs import NEEDS
from harness.judging.results import Grade, Outcome
from harness.scenario import Expect, read_text
from harness.scenario.model import Grading
from reference_impl.report import Accepted, ConsumerReport

RAISED = ConsumerReport("RAISED:ConnectionError", False, "RAISED:ConnectionError")
CLEAN = ConsumerReport("COMPLETE", True)
QUIET = ConsumerReport("COMPLETE", False)  # ended without telling the application anything
MISMATCH = "ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


M1, M2, M3, CHANGED = digest("m1"), digest("m2"), digest("m3"), digest("m3 changed")
SENT = (M1, M2, M3)


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (Outcome.PASS, Grade.STRICT),
        (Outcome.VIOLATION, Grade.FAILED),
        (Outcome.NO_VERDICT, Grade.FAILED),
        (Outcome.ERROR, None),
        (Outcome.INCONCLUSIVE, None),
    ],
)
def test_outcomes_that_decide_alone(outcome: Outcome, expected: Grade | None) -> None:
    assert grade(outcome, [], Expect(complete=False), RAISED) == expected


def test_a_failure_surfaced_in_other_words_is_non_strict() -> None:
    expect = Expect(verdict="STALE_PARTIAL_BUFFER", complete=False, accepted_messages=0)
    missed = ["verdict", "accepted_messages"]
    assert grade(Outcome.FAIL, missed, expect, RAISED) is Grade.NON_STRICT


def test_a_failure_kept_from_the_application_fails() -> None:
    expect = Expect(verdict="ERR_ZPARQL_STREAM_TRUNCATED", complete=False)
    assert grade(Outcome.FAIL, ["verdict"], expect, QUIET) is Grade.FAILED


def test_a_whole_stream_refused_fails() -> None:
    expect = Expect(verdict="COMPLETE_EXPLICIT", complete=True)
    assert grade(Outcome.FAIL, ["verdict", "complete"], expect, RAISED) is Grade.FAILED


def test_an_unprovable_complete_claim_is_informational() -> None:
    """Expected not complete (a close-delimited body), claimed complete, and I2 held."""
    expect = Expect(verdict="MESSAGE_COMPLETE", complete=False)
    assert grade(Outcome.FAIL, ["complete"], expect, CLEAN) is Grade.INFORMATIONAL


def test_a_key_marked_informational_does_not_count() -> None:
    expect = Expect(verdict="COMPLETE_EXPLICIT", grading=Grading(verdict="informational"))
    assert grade(Outcome.FAIL, ["verdict"], expect, RAISED) is Grade.INFORMATIONAL


def test_the_worst_mismatch_decides() -> None:
    expect = Expect(verdict="STALE_PARTIAL_BUFFER", complete=False, accepted_messages=0)
    # the verdict is non-strict (surfaced), the completeness claim of a cut stream was caught
    # by I2 already (a violation); here a count and the verdict: non-strict
    assert grade(Outcome.FAIL, ["accepted_messages"], expect, RAISED) is Grade.NON_STRICT


def test_a_whole_stream_taken_in_the_clients_own_words_is_strict() -> None:
    """A clean stream the client took whole (I2 held): its verdict is not ours, and an SDK
    keeps ``[DONE]`` to itself, so it hands on one message fewer."""
    expect = Expect(verdict="COMPLETE_EXPLICIT", complete=True, accepted_messages=11)
    assert grade(Outcome.FAIL, ["verdict", "accepted_messages"], expect, CLEAN) is Grade.STRICT
    # Not when it refused the stream, nor when the case expects no success.
    assert grade(Outcome.FAIL, ["verdict"], expect, QUIET) is Grade.FAILED
    partial = Expect(verdict="PARTIAL_MID_TOKEN", complete=False)
    assert grade(Outcome.FAIL, ["verdict"], partial, CLEAN) is Grade.FAILED


# --- a transport client and a change only the payload's checks refuse (judge.as_transported) --


def _carried_whole(
    delivered: int,
    changed: tuple[tuple[str, str], ...] = (),
    added: tuple[str, ...] = (),
) -> WireConnection:
    """One connection whose framing carried every message the producer sent, to its end, and
    delivered ``delivered`` of them; what the payload saw ``changed`` in place or ``added``."""
    return WireConnection(
        number=1,
        sent=SENT,
        carrying=SENT,
        producer_end=True,
        delivered_end=True,
        delivered=delivered,
        payload_changed=changed,
        payload_added=added,
    )


def _changed_trailer(transport_client: bool, accepted: tuple[str, ...]) -> Judgement:
    """An envelope whose last message (the trailer) a corrupt fault changed in place: the
    framing carries it whole, the checksum refuses it. The client hands on ``accepted`` and
    ends normally."""
    wire = _carried_whole(3, changed=((M3, CHANGED),))
    obs = Observation(
        report=ConsumerReport("COMPLETE", True, accepted=tuple(Accepted(d, 2) for d in accepted)),
        timeline=Timeline(),
        wire=(wire,),
        producer_max_held=3,
        foreign=True,
        transport_client=transport_client,
    )
    return judge(Expect(verdict=MISMATCH, complete=False, accepted_messages=0), obs)


def test_a_transport_client_handing_on_what_was_delivered_is_informational() -> None:
    """The client handed on the changed trailer exactly as the transport delivered it (I1
    against what the producer sent): only the envelope's checksum, its application's check,
    could tell. The outcome stays a violation; the grade says what the client could do."""
    verdict = _changed_trailer(True, (M1, M2, CHANGED))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.INFORMATIONAL)


def test_a_consumer_that_owns_the_payload_still_fails_there() -> None:
    """A team's envelope consumer (not a transport client) is held to the checksum."""
    verdict = _changed_trailer(False, (M1, M2, CHANGED))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.FAILED)


def test_a_transport_client_that_changes_a_message_itself_still_fails() -> None:
    """What it handed on is not what the transport delivered either (a repaired byte)."""
    verdict = _changed_trailer(True, (M1, M2, digest("m3 repaired")))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.FAILED)


def test_a_transport_client_that_drops_a_delivered_message_still_fails() -> None:
    """Claiming complete without message 2, which the transport delivered: I2 as delivered."""
    verdict = _changed_trailer(True, (M1, CHANGED))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.FAILED)


def test_only_the_adapters_of_clients_below_the_payload_are_transport_clients() -> None:
    transport = {a.name for a in ADAPTERS if hands_on_transport(a.function)}
    assert transport == {
        "httpx-sse",
        "httpx-sse-async",
        "sseclient-py",
        "requests",
        "aiohttp-sse",
        "aiohttp-ws",
        "websockets",
        "grpcio",
    }
    assert not hands_on_transport(None)
    assert not hands_on_transport("tests.consumers.functions:echo")


def test_a_failure_surfaced_where_completeness_is_unprovable_is_non_strict() -> None:
    """A success verdict with ``complete: false`` (a response head cut before any message, a
    cut at a boundary of a framing without an end marker): a client that raises surfaced a
    failure; only a quiet end keeps one from the application."""
    expect = Expect(verdict="MESSAGE_COMPLETE", complete=False, accepted_messages=0)
    assert grade(Outcome.FAIL, ["verdict"], expect, RAISED) is Grade.NON_STRICT
    assert grade(Outcome.FAIL, ["verdict"], expect, QUIET) is Grade.FAILED


# --- what an expectation needs a consumer to be given (derived: harness/judging/needs.py) --

STALL = Expect(verdict="STALE_PARTIAL_BUFFER", complete=False, accepted_messages=2)
NEEDS_TIMEOUT = frozenset({"incomplete_message_timeout"})


def test_an_expectation_that_needs_what_the_consumer_lacks_is_informational() -> None:
    """A client library without the seed's incomplete-message timeout waits a stall out and
    takes the whole stream: it missed every key, but was never told the timeout."""
    missed = ["verdict", "complete", "accepted_messages"]
    lacking = Circumstances(needs=NEEDS_TIMEOUT, lacks=NEEDS_TIMEOUT)
    assert grade(Outcome.FAIL, missed, STALL, CLEAN, lacking) is Grade.INFORMATIONAL


def test_a_consumer_given_what_the_expectation_needs_is_held_to_it() -> None:
    """A consumer told the timeout (the contract passes it; an adapter that honours it) that
    waits the stall out and ends quietly: the default rules, which fail a failure kept from
    the application."""
    missed = ["verdict", "complete", "accepted_messages"]
    told = Circumstances(needs=NEEDS_TIMEOUT)
    assert grade(Outcome.FAIL, missed, STALL, QUIET, told) is Grade.FAILED
    other = Circumstances(needs=NEEDS_TIMEOUT, lacks=frozenset({"idle_timeout"}))
    assert grade(Outcome.FAIL, missed, STALL, QUIET, other) is Grade.FAILED


@pytest.mark.parametrize("outcome", [Outcome.VIOLATION, Outcome.NO_VERDICT])
def test_no_need_excuses_a_broken_invariant(outcome: Outcome) -> None:
    """A stale or corrupted message handed on, a complete claim from a cut link, no verdict in
    time: failed whatever the expectation needs."""
    lacking = Circumstances(needs=NEEDS_TIMEOUT, lacks=NEEDS_TIMEOUT)
    assert grade(outcome, [], STALL, CLEAN, lacking) is Grade.FAILED


def test_a_consumer_that_meets_an_expectation_it_lacks_the_means_for_is_strict() -> None:
    lacking = Circumstances(needs=NEEDS_TIMEOUT, lacks=NEEDS_TIMEOUT)
    assert grade(Outcome.PASS, [], STALL, RAISED, lacking) is Grade.STRICT


def test_the_adapters_and_the_derivation_know_the_same_needs() -> None:
    assert CATALOGUE_NEEDS == NEEDS


def test_what_each_adapter_lacks() -> None:
    """A read timeout is the idle timeout (no client library has an incomplete-message one);
    the WebSocket and gRPC clients have a size cap and no read timeout; the SDKs know their
    payload; a consumer program or a team's own function is told everything."""
    lacked = {a.name: lacks(a.function) for a in ADAPTERS}
    sse = frozenset({"incomplete_message_timeout", "max_message_bytes", "payload"})
    framed = frozenset({"idle_timeout", "incomplete_message_timeout", "payload"})
    sdk = frozenset({"incomplete_message_timeout", "max_message_bytes"})
    assert lacked == {
        "mcp-python": sdk,
        "openai": sdk,
        "openai-async": sdk,
        "anthropic": sdk,
        "anthropic-async": sdk,
        "httpx-sse": sse,
        "httpx-sse-async": sse,
        "sseclient-py": sse,
        "requests": sse,
        "aiohttp-sse": sse,
        "aiohttp-ws": framed,
        "websockets": framed,
        "grpcio": framed,
    }
    assert lacks(None) == frozenset()
    assert lacks("tests.consumers.functions:echo") == frozenset()


def test_the_reference_consumer_is_held_to_an_expectation_whatever_it_needs() -> None:
    """Not foreign: no grade, the outcome alone."""
    obs = Observation(report=QUIET, timeline=Timeline(), lacks=NEEDS_TIMEOUT, needs=NEEDS_TIMEOUT)
    verdict = judge(STALL, obs)
    assert (verdict.outcome, verdict.grade) == (Outcome.FAIL, None)


def test_needs_written_in_a_scenario_file_are_read_as_not_written() -> None:
    """``expect.grading.needs`` is deprecated (``grading-needs``): what an expectation needs is
    the case's to say, so a written one is read as not written, with a warning, and is an error
    under ``validate --strict``."""
    text = """
name: stall
description: A stall past the incomplete-message timeout.
source: "seed 000"
link: {framing: sse, payload: messages, consumer: {incomplete_message_timeout_ms: 300}}
faults: [{kind: stall, at: {frame: 3, fraction: 0.5}, duration_ms: 2500}]
expect:
  verdict: STALE_PARTIAL_BUFFER
  grading: {needs: [incomplete_message_timeout]}
"""
    load = read_text(text)
    assert load.issues == ()
    assert [(w.key_path, w.line) for w in load.warnings] == [("expect.grading.needs", 9)]
    (scenario,) = load.scenarios
    assert scenario.expect.grading == Grading()
    assert [issue.key_path for issue in load.strictly().issues] == ["expect.grading.needs"]


# --- the principles: more than the result, refusing a result the payload had proved --------


def test_a_complete_claim_with_more_messages_than_the_result_holds_fails() -> None:
    """Four frames became six (the abandoned attempt kept, the replay appended), I1 holding
    for each: more than was sent is a defect, never the client's own words."""
    expect = Expect(verdict="RESULT_VERIFIED", complete=True, accepted_messages=5)
    seven = ConsumerReport("COMPLETE", True, accepted=tuple(Accepted(M1, 2) for _ in range(7)))
    assert grade(Outcome.FAIL, ["verdict", "accepted_messages"], expect, seven) is Grade.FAILED
    four = ConsumerReport("COMPLETE", True, accepted=tuple(Accepted(M1, 2) for _ in range(4)))
    assert grade(Outcome.FAIL, ["verdict", "accepted_messages"], expect, four) is Grade.STRICT


def test_more_messages_handed_on_before_a_raise_are_non_strict() -> None:
    """Streamed before the failure surfaced (each proven real by I1): not a complete claim."""
    expect = Expect(verdict="STALE_PARTIAL_BUFFER", complete=False, accepted_messages=2)
    three = replace(RAISED, accepted=tuple(Accepted(M1, 2) for _ in range(3)))
    assert grade(Outcome.FAIL, ["verdict", "accepted_messages"], expect, three) is (
        Grade.NON_STRICT
    )


PROVED = Expect(verdict="COMPLETE_EXPLICIT", complete=True, accepted_messages=4)
MISSED = ["verdict", "complete", "accepted_messages"]


def test_refusing_a_result_a_fault_broke_after_the_payload_proved_it_is_non_strict() -> None:
    """``[DONE]`` came, then the HTTP body was cut: a fail-closed client that raises on the cut
    body (what the OpenAI SDK does on an incomplete chunked read) is cautious, not broken."""
    proved = Circumstances(needs=frozenset({"payload"}))
    assert grade(Outcome.FAIL, MISSED, PROVED, RAISED, proved) is Grade.NON_STRICT


def test_refusing_a_stream_that_reached_the_consumer_whole_fails() -> None:
    """No fault broke the stream, or one broke it before the payload's proof and the result
    still came whole (a comment inside an event): refusing it is the defect."""
    assert grade(Outcome.FAIL, MISSED, PROVED, RAISED) is Grade.FAILED


def test_a_result_the_payload_proved_kept_quiet_still_fails() -> None:
    """Ending quietly without the result is no caution: the application is told nothing."""
    proved = Circumstances(needs=frozenset({"payload"}))
    assert grade(Outcome.FAIL, MISSED, PROVED, QUIET, proved) is Grade.FAILED


def test_a_transport_client_lacking_the_payload_is_informational_there() -> None:
    proved = Circumstances(needs=frozenset({"payload"}), lacks=frozenset({"payload"}))
    assert grade(Outcome.FAIL, MISSED, PROVED, QUIET, proved) is Grade.INFORMATIONAL


# --- a transport client and messages a fault added after the end (payload_added) ----------


def _junk_after_the_end(transport_client: bool, accepted: tuple[str, ...]) -> Judgement:
    """An event inserted after the producer's last message (junk after ``data: [DONE]``): the
    framing carries it whole, the payload refuses a frame after the signal."""
    junk = digest("junk")
    wire = _carried_whole(4, added=(junk,))
    obs = Observation(
        report=ConsumerReport("COMPLETE", True, accepted=tuple(Accepted(d, 2) for d in accepted)),
        timeline=Timeline(),
        wire=(wire,),
        producer_max_held=3,
        foreign=True,
        transport_client=transport_client,
    )
    return judge(Expect(verdict="MALFORMED_PAYLOAD", complete=False, accepted_messages=0), obs)


def test_a_transport_client_handing_on_an_event_added_after_the_end_is_informational() -> None:
    """A generic SSE client does not know that ``[DONE]`` ends the payload: it hands on the
    next event as the transport delivered it."""
    verdict = _junk_after_the_end(True, (M1, M2, M3, digest("junk")))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.INFORMATIONAL)


def test_a_consumer_that_knows_the_payload_fails_on_an_event_after_the_end() -> None:
    verdict = _junk_after_the_end(False, (M1, M2, M3, digest("junk")))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.FAILED)


def test_a_transport_client_handing_on_an_event_nobody_delivered_still_fails() -> None:
    """An empty event for a stray CR is no event of the transport's (httpx-sse's bug 5)."""
    verdict = _junk_after_the_end(True, (M1, M2, digest(""), M3))
    assert (verdict.outcome, verdict.grade) == (Outcome.VIOLATION, Grade.FAILED)
