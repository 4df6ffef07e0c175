"""Grades of foreign consumers (``harness/judging/grades.py``): one test per rule."""

from __future__ import annotations

import hashlib

import pytest

from harness.consumers.adapters import ADAPTERS, hands_on_transport
from harness.judging.grades import grade
from harness.judging.judge import Judgement, Observation, judge
from harness.judging.results import Grade, Outcome
from harness.judging.timeline import Timeline
from harness.judging.wire import WireConnection
from harness.scenario import Expect
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


def _changed_trailer(transport_client: bool, accepted: tuple[str, ...]) -> Judgement:
    """An envelope whose last message (the trailer) a corrupt fault changed in place: the
    framing carries it whole, the checksum refuses it. The client hands on ``accepted`` and
    ends normally."""
    wire = WireConnection(
        number=1,
        sent=SENT,
        carrying=SENT,
        producer_end=True,
        delivered_end=True,
        delivered=3,
        payload_changed=((M3, CHANGED),),
    )
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
