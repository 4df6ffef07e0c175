"""Grades of foreign consumers (``harness/judging/grades.py``): one test per rule."""

from __future__ import annotations

import pytest

from harness.judging.grades import grade
from harness.judging.results import Grade, Outcome
from harness.scenario import Expect
from harness.scenario.model import Grading
from reference_impl.report import ConsumerReport

RAISED = ConsumerReport("RAISED:ConnectionError", False, "RAISED:ConnectionError")
CLEAN = ConsumerReport("COMPLETE", True)
QUIET = ConsumerReport("COMPLETE", False)  # ended without telling the application anything


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
