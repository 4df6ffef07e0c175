"""Grades for consumers other than the reference one, after Autobahn's, from principles
(``docs/grades.md`` has them as a table a client author can check by hand).

The library's expectations are the seeds' exact verdicts, written for the reference consumer,
which is held to them everywhere (its outcome is its grade). A consumer of another kind is
broken when it hands on wrong data, claims a cut stream complete, hangs, keeps a failure from its
application, or refuses a stream that reached it whole; anything else it does differently is its
own way of being right:

- ``failed``: safety broke (I1 a message never sent, fused, split or out of order; I2 a complete
  result from a cut link; I3 a message of an abandoned attempt, one handed on twice, a gap at a
  resume point, stale bytes; I6 unbounded buffering), liveness broke (I4: no verdict in time),
  a failure was kept from the application (no ``error_code`` where the case expects a failure),
  it refused a stream the case says reached it whole (no fault broke it, or none before the
  payload proved the result), or it claimed complete with more messages than the result holds.
- ``informational``: what it missed is a key the scenario marks informational, or a complete
  claim nothing disproves (I2 held), or the expectation needs what this consumer cannot be given
  (a need derived from the case, ``needs.py``: a timeout or limit its client library lacks, the
  payload's rules for a client below the payload layer).
- ``non-strict``: every invariant held and it surfaced the failure the case expects in its own
  words (another error code, more messages handed on before it raised: streamed messages cannot
  be taken back, and I1 proved each real), or it refused a result that a fault broke only after
  the payload had proved it (a cut after ``[DONE]``, junk after the last chunk: caution, not a
  defect).
- ``strict``: the outcome is ``pass``; or it took the whole stream (a complete claim I2 upheld)
  and only its words differ: its own verdict for "complete", or fewer messages where it keeps
  end-of-stream messages to itself (an SDK consumes ``[DONE]``; I2 proved every message that
  carries the result came).

A transport client (a client library below the payload layer, which carries any payload) that
hands on a message a fault changed in place, as the transport delivered it, breaks I1 against
what the producer sent; but verifying an envelope's records against its checksum is its
application's job, which the client is never told to do. If, judged against what the transport
delivered, every invariant holds, the case asked for a check the client cannot express:
``informational`` (``transported_grade``).

Cases the harness could not run or prove (``error``, ``inconclusive``) get no grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.judging.needs import expects_whole
from harness.judging.results import Grade, Outcome
from harness.scenario.model import SUCCESS_VERDICTS, CountRange, Expect
from reference_impl.report import ConsumerReport, accepted_total


@dataclass(frozen=True, slots=True)
class Circumstances:
    """What the case says about the consumer besides its expectation (``needs.case_needs``):
    what the expectation needs, and what this consumer lacks of it."""

    #: what the expectation needs the consumer to be given (``needs.NEEDS``)
    needs: frozenset[str] = frozenset()
    #: what this consumer cannot be given (``Need``s its client library does not honour)
    lacks: frozenset[str] = frozenset()

    @property
    def unmet(self) -> frozenset[str]:
        return self.needs & self.lacks

    @property
    def proved_then_broken(self) -> bool:
        """The result stood on the payload's proof before a fault broke the stream."""
        return "payload" in self.needs


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
    return expects_whole(expect)


def more_than_the_result(report: ConsumerReport, expect: Expect) -> bool:
    """A complete claim with more messages than the expectation's result holds."""
    wanted = expect.accepted_messages
    most = wanted.max if isinstance(wanted, CountRange) else wanted
    return report.complete and most is not None and accepted_total(report) > most


def grade(
    outcome: Outcome,
    mismatched: Sequence[str],
    expect: Expect,
    report: ConsumerReport | None,
    circumstances: Circumstances = Circumstances(),
) -> Grade | None:
    """The grade of a foreign consumer; ``mismatched`` are the expectation keys it missed."""
    if outcome in (Outcome.ERROR, Outcome.INCONCLUSIVE):
        return None
    # Safety and liveness first: no need excuses a broken invariant, nor a verdict never come.
    if outcome in (Outcome.NO_VERDICT, Outcome.VIOLATION) or report is None:
        return Grade.FAILED
    if outcome is Outcome.PASS:
        return Grade.STRICT
    if more_than_the_result(report, expect):
        return Grade.FAILED  # delivered more than was sent, whatever else it did
    if circumstances.unmet:
        return Grade.INFORMATIONAL  # the case asks for what this consumer cannot be told
    kinds = {_mismatch_grade(key, expect, report, circumstances) for key in mismatched}
    for worst in (Grade.FAILED, Grade.NON_STRICT, Grade.INFORMATIONAL):
        if worst in kinds:
            return worst
    return Grade.STRICT


def _mismatch_grade(
    key: str, expect: Expect, report: ConsumerReport, circumstances: Circumstances
) -> Grade:
    if expect.grading.is_informational(key):
        return Grade.INFORMATIONAL
    if key in ("verdict", "accepted_messages") and report.complete and expects_success(expect):
        return Grade.STRICT  # the whole stream taken (I2 held): its words, not ours, differ
    if key == "complete" and report.complete:
        # Claiming complete where the case says "not provably complete" is informational: I2
        # held (else the outcome would be a violation), so the link was not cut early and the
        # claim is one no client can prove either way.
        return Grade.INFORMATIONAL
    if refuses_whole_stream(expect):
        if surfaced_failure(report) and circumstances.proved_then_broken:
            return Grade.NON_STRICT  # refused a result a fault broke after the payload proved it
        return Grade.FAILED  # refused a stream that reached it whole
    if not surfaced_failure(report):
        return Grade.FAILED  # a failure kept from the application
    return Grade.NON_STRICT  # the failure surfaced, in other words or after more messages


def transported_grade(transported: Outcome) -> Grade:
    """The grade of a transport client that failed a case where a fault changed a message in
    place that only the payload's own checks refuse; ``transported`` is the outcome judged
    against the messages as the transport delivered them. Every invariant held there (a pass,
    or only the payload's verdict missed): informational. Anything else it broke still fails."""
    return Grade.INFORMATIONAL if transported in (Outcome.PASS, Outcome.FAIL) else Grade.FAILED
