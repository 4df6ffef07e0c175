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
  which no client can prove either way; or the expectation needs what this consumer cannot be
  given (``expect.grading.needs``: a seed timeout or size limit its client library does not
  have, the payload's rules for a client below the payload layer), so every key it missed is.

A transport client (a client library below the payload layer, which carries any payload) that
hands on a message a fault changed in place, as the transport delivered it, breaks I1 against
what the producer sent; but verifying an envelope's records against its checksum is its
application's job, which the client is never told to do. If, judged against what the transport
delivered, every invariant holds, the case asked for a check the client cannot express:
``informational`` (``transported_grade``).

Cases the harness could not run or prove (``error``, ``inconclusive``) get no grade.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

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


def refuses_whole_stream(expect: Expect) -> bool:
    """Raising here refuses a stream the case says was delivered whole: it expects success and
    does not say the stream is unprovable (``complete: false`` with a success verdict is a
    stream cut at a message boundary, or a close-delimited body: a client that surfaces a
    failure there is cautious, not wrong)."""
    return expects_success(expect) and expect.complete is not False


def unmet_needs(expect: Expect, lacks: Collection[str]) -> tuple[str, ...]:
    """What the expectation needs (``expect.grading.needs``) that the consumer lacks."""
    return tuple(need for need in expect.grading.needs if need in lacks)


def grade(
    outcome: Outcome,
    mismatched: Sequence[str],
    expect: Expect,
    report: ConsumerReport | None,
    lacks: Collection[str] = (),
) -> Grade | None:
    """The grade of a foreign consumer; ``mismatched`` are the expectation keys it missed,
    ``lacks`` what it cannot be given (``Need``s: its client library has no such timeout or
    limit, or it is below the payload layer)."""
    if outcome in (Outcome.ERROR, Outcome.INCONCLUSIVE):
        return None
    # Invariants first: no need excuses a broken one, nor a verdict that never came.
    if outcome in (Outcome.NO_VERDICT, Outcome.VIOLATION) or report is None:
        return Grade.FAILED
    if outcome is Outcome.PASS:
        return Grade.STRICT
    if unmet_needs(expect, lacks):
        return Grade.INFORMATIONAL  # the case asks for what this consumer cannot be told
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
    if refuses_whole_stream(expect) or not surfaced_failure(report):
        return Grade.FAILED  # a whole stream refused, or a failure kept from the application
    return Grade.NON_STRICT  # the failure surfaced, in other words or after more messages


def transported_grade(transported: Outcome) -> Grade:
    """The grade of a transport client that failed a case where a fault changed a message in
    place that only the payload's own checks refuse; ``transported`` is the outcome judged
    against the messages as the transport delivered them. Every invariant held there (a pass,
    or only the payload's verdict missed): informational. Anything else it broke still fails."""
    return Grade.INFORMATIONAL if transported in (Outcome.PASS, Outcome.FAIL) else Grade.FAILED
