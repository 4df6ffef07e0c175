"""Grades for consumers other than the reference one, after Autobahn's (``docs/grades.md``).

The library's expectations are the seeds' exact verdicts, written for the reference consumer,
which is held to them everywhere (its outcome is its grade). A client library cannot show a
buffer state or take streamed tokens back, so a foreign consumer is graded:

- ``strict``: it met the expectation exactly (the outcome is ``pass``), or the case expects
  the whole stream taken, it took it (a complete claim I2 upheld) and differs only in words:
  its own verdict for "complete", or fewer messages where it keeps the end-of-stream
  messages to itself (an SDK consumes ``[DONE]``; I2 proved every message with content came).
- ``non-strict``: every invariant held and it surfaced the failure the case expects, in its own
  words (another error code, or more messages handed on before it raised: streamed messages
  cannot be taken back, and I1 proved each was real).
- ``failed``: an invariant broke (a corrupted, fused, split or stale message handed on, a
  complete result from a cut link), no verdict in time, or it refused a stream the case says
  was delivered whole.
- ``informational``: the only differences are in keys the scenario marks informational for
  foreign consumers (``expect.grading``), such as completeness of a close-delimited stream,
  which no client can prove either way.

Cases the harness could not run or prove (``error``, ``inconclusive``) get no grade.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.judging.results import Grade, Outcome
from harness.scenario.model import SUCCESS_VERDICTS, Expect
from reference_impl.report import ConsumerReport


def surfaced_failure(report: ConsumerReport) -> bool:
    """The consumer told its application that the stream failed: its report names an error
    (``error_code``: a code of ours, or what the client raised)."""
    return not report.complete and report.error_code is not None


def expects_success(expect: Expect) -> bool:
    """The case says the whole stream was delivered and should be taken."""
    verdicts = (expect.verdict,) if expect.verdict is not None else (expect.any_of or ())
    return expect.complete is True or (bool(verdicts) and set(verdicts) <= SUCCESS_VERDICTS)


def grade(
    outcome: Outcome, mismatched: Sequence[str], expect: Expect, report: ConsumerReport | None
) -> Grade | None:
    """The grade of a foreign consumer; ``mismatched`` are the expectation keys it missed."""
    if outcome in (Outcome.ERROR, Outcome.INCONCLUSIVE):
        return None
    if outcome in (Outcome.NO_VERDICT, Outcome.VIOLATION) or report is None:
        return Grade.FAILED
    if outcome is Outcome.PASS:
        return Grade.STRICT
    kinds = {_mismatch_grade(key, expect, report) for key in mismatched}
    for worst in (Grade.FAILED, Grade.NON_STRICT, Grade.INFORMATIONAL):
        if worst in kinds:
            return worst
    return Grade.STRICT


def _mismatch_grade(key: str, expect: Expect, report: ConsumerReport) -> Grade:
    if expect.grading.is_informational(key):
        return Grade.INFORMATIONAL
    if key in ("verdict", "accepted_messages") and report.complete and expects_success(expect):
        return Grade.STRICT  # the whole stream taken (I2 held): its words, not ours, differ
    if key == "complete":
        # Claiming complete where the case says "not provably complete" is informational: I2
        # held (else the outcome would be a violation), so the link was not cut early and
        # the claim is one no client can prove either way. Refusing a whole stream fails.
        return Grade.INFORMATIONAL if report.complete else Grade.FAILED
    if expects_success(expect) or not surfaced_failure(report):
        return Grade.FAILED  # a whole stream refused, or a failure kept from the application
    return Grade.NON_STRICT  # the failure surfaced, in other words or after more messages
