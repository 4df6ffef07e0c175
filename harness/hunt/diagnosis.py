"""How a hunted plan stands, and a failure's diagnosis normalised so that two plans that break a
consumer the same way have the same key. Pure.

Every plan runs twice: against the reference consumer (the sanity gate), then against the
hunted consumer, expecting what the reference concluded. The reference's run decides whether
the plan counts at all:

- ``inconclusive`` or ``error``: the plan is not valid for this link (a fault that never fired,
  a position the stream lacks): it is discarded, never reported;
- ``violation`` or ``no_verdict``: the reference consumer broke an invariant or hung: a harness
  or reference bug, reported as such and never as the consumer's;
- otherwise its report is the expectation.

The consumer fails a plan when its grade is ``failed`` (``docs/grades.md``: a failure it
surfaced in its own words, another error code, is ``non-strict`` and no failure), or, held
strictly or ungraded, when its outcome is ``fail``, ``violation`` or ``no_verdict``. An
``inconclusive`` or ``error`` run of the consumer, where the reference's was fine, did not test
it as declared: the plan is discarded; so is a plan on which the reference reconnected and this
consumer, opening fewer connections, failed closed instead (the contract lets a consumer
reconnect, it does not make it), and a plan on which the consumer was killed at the deadline
before the plan could test it: before every fault fired, or with less time after its first
byte than the reference needed (the deadline counts from the program's first connection, its
start-up has a bound of its own; a consumer slow between connecting and its first byte on a
loaded machine has not hung by the plan's making). Held strictly, a non-strict
grade still passes on a plan with an RST: a reset discards the bytes the receiver had not read,
so what a consumer had seen before it (the verdict, the count) is a race, not a bug.

A failure's key is the outcome, the invariants it broke, and for a failed expectation what
differs (verdict, completeness, more or fewer messages): the evidence's words and numbers are
left out, so a cut one byte later is the same failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from harness.hunt.plan import Plan, resets
from harness.judging.results import CaseResult, Grade, Outcome
from harness.scenario.model import CountRange, Expect
from reference_impl.report import ConsumerReport, accepted_total

#: why a plan is discarded when the consumer did not reconnect where the reference did
NO_RECONNECT = "does not reconnect (the contract lets it)"
#: why a plan is discarded when the consumer was killed at the deadline before it was tested
LATE = "killed at the deadline before the plan tested it (a loaded machine?)"
#: time a consumer program is given beyond what the reference needed, before a hang counts
HANG_MARGIN_S = 1.0
CAUGHT = frozenset({Outcome.FAIL, Outcome.VIOLATION, Outcome.NO_VERDICT})
INVALID = frozenset({Outcome.INCONCLUSIVE, Outcome.ERROR})


class Standing(StrEnum):
    """What one plan showed."""

    PASS = "pass"  # the consumer did as the reference did
    FAILURE = "failure"  # the consumer failed where the reference passed
    INVALID = "invalid"  # the reference run says the plan is not valid for this link
    REFERENCE = "reference"  # the reference consumer itself failed: a harness or reference bug


@dataclass(frozen=True, slots=True)
class Judged:
    """A plan's runs and what they mean."""

    plan: Plan
    standing: Standing
    reference: CaseResult
    #: the consumer's run (None when the reference run already decided)
    consumer: CaseResult | None = None
    #: what the reference concluded, the consumer's expectation
    expect: Expect | None = None
    #: the normalised diagnosis of a failure (or of the reference's problem, or why the plan
    #: was discarded)
    key: str = ""
    #: how much the faults changed the reference's conclusion from the clean link's
    effect: float = 0.0

    @property
    def diagnosis(self) -> str:
        """The judge's own words for what happened."""
        result = self.consumer if self.standing is Standing.FAILURE else self.reference
        return result.diagnosis if result is not None else ""


def connections(result: CaseResult) -> int:
    """How many connections the consumer opened, as the proxy saw them."""
    timeline = result.timeline
    seen = {end.connection for end in timeline.ends}
    seen |= {segment.connection for segment in timeline.segments}
    return len(seen)


def killed_at_deadline(result: CaseResult, deadline_ms: float) -> bool:
    """No report, and the run lasted the whole deadline: killed, not crashed."""
    return result.report is None and result.duration_s >= deadline_ms / 1000


def first_byte_at(result: CaseResult) -> float | None:
    """Seconds from the case's start until the proxy first wrote to the consumer or the
    producer for it (None: the consumer never connected)."""
    return min((segment.t for segment in result.timeline.segments), default=None)


def tested_before_killed(plan: Plan, reference: CaseResult, consumer: CaseResult) -> bool:
    """Whether a consumer killed at the deadline was tested by the plan: every fault fired,
    and after its first byte it had the time the reference took, and a margin."""
    if any(c.name == "I5" and c.ok is False for c in consumer.checks):
        return False  # a fault never fired: the consumer never got that far
    start = first_byte_at(consumer)
    if start is None:
        return False
    # the deadline counts from the consumer's start (its first connection), not the proxy's
    since_start = start - (consumer.startup_s or 0.0)
    return plan.deadline_ms / 1000 - since_start >= reference.duration_s + HANG_MARGIN_S


def is_failure(result: CaseResult, *, strict: bool = False) -> bool:
    """A ``failed`` grade; held ``strict``ly (or ungraded), an outcome of fail, violation or
    no verdict: any difference from what the reference concluded."""
    if result.grade is not None and not strict:
        return result.grade is Grade.FAILED
    return result.outcome in CAUGHT


def differences(report: ConsumerReport, expect: Expect) -> list[str]:
    """What in ``report`` differs from ``expect``, in words without numbers."""
    found = []
    got = {report.verdict, report.error_code} - {None}
    wanted = (expect.verdict,) if expect.verdict is not None else expect.any_of
    if wanted is not None and got.isdisjoint(wanted):
        found.append("verdict")
    if expect.complete is not None and report.complete != expect.complete:
        found.append("claims complete" if report.complete else "not complete")
    count, wanted_count = accepted_total(report), expect.accepted_messages
    if isinstance(wanted_count, CountRange):
        if count < wanted_count.min:
            found.append("fewer messages")
        elif wanted_count.max is not None and count > wanted_count.max:
            found.append("more messages")
    elif wanted_count is not None and count != wanted_count:
        found.append("fewer messages" if count < wanted_count else "more messages")
    return found


def failure_key(result: CaseResult, expect: Expect | None) -> str:
    """``violation: I1, I2``, ``fail: verdict, more messages``, ``no_verdict: I4``."""
    broken = [c.name for c in result.checks if c.ok is False and c.name != "expect"]
    if result.outcome is Outcome.NO_VERDICT:
        broken = ["I4"]
    elif result.outcome is Outcome.FAIL and result.report is not None and expect is not None:
        broken = differences(result.report, expect)
    return f"{result.outcome.value}: {', '.join(broken) or '-'}"


def effect(clean: ConsumerReport | None, report: ConsumerReport | None) -> float:
    """How far the reference's conclusion moved from the clean link's (a search target:
    plans whose faults matter reach the consumer's error paths)."""
    if clean is None or report is None:
        return 0.0
    lost = abs(accepted_total(clean) - accepted_total(report)) / max(accepted_total(clean), 1)
    return float(report.verdict != clean.verdict) + float(report.complete != clean.complete) + lost


def reference_standing(plan: Plan, reference: CaseResult) -> Judged | None:
    """The plan's standing when the reference run already decides it (invalid, or a
    reference problem); None when the consumer must be run."""
    if reference.outcome in INVALID:
        return Judged(plan, Standing.INVALID, reference)
    if reference.outcome in (Outcome.VIOLATION, Outcome.NO_VERDICT) or reference.report is None:
        return Judged(plan, Standing.REFERENCE, reference, key=failure_key(reference, None))
    return None


def classify(
    plan: Plan,
    reference: CaseResult,
    consumer: CaseResult,
    expect: Expect,
    clean: ConsumerReport | None = None,
    *,
    strict: bool = False,
) -> Judged:
    """Both runs of a plan the reference passed (``strict``: see ``is_failure``)."""
    moved = effect(clean, reference.report)
    if consumer.outcome in INVALID:  # the harness did not test the consumer as declared
        return Judged(plan, Standing.INVALID, reference, consumer, expect, effect=moved)
    if (
        plan.faults  # the clean link's hang is the consumer's, whatever delayed it
        and killed_at_deadline(consumer, plan.deadline_ms)
        and not tested_before_killed(plan, reference, consumer)
    ):
        return Judged(plan, Standing.INVALID, reference, consumer, expect, LATE, moved)
    # after an RST, what the consumer had read before it is a race (a reset discards unread
    # bytes): a failure it surfaced in other words (non-strict) is not held even --strict
    raced = resets(plan.faults) and consumer.grade is Grade.NON_STRICT
    failed = is_failure(consumer, strict=strict and not raced)
    if (
        failed
        and consumer.outcome is Outcome.FAIL
        and connections(consumer) < connections(reference)
    ):
        # The reference reconnected and got further; this consumer failed closed instead: the
        # contract lets a consumer reconnect ("may"), so that is no failure of its.
        why = NO_RECONNECT
        return Judged(plan, Standing.INVALID, reference, consumer, expect, why, moved)
    if failed:
        key = failure_key(consumer, expect)
        return Judged(plan, Standing.FAILURE, reference, consumer, expect, key, moved)
    return Judged(plan, Standing.PASS, reference, consumer, expect, effect=moved)
