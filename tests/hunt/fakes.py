"""Results and checks made up for the hunt's pure tests: no socket, no process, no clock."""

from __future__ import annotations

from collections.abc import Callable

from harness.evidence.timeline import Timeline
from harness.faults import Corrupt, Kill
from harness.hunt.diagnosis import Judged, Standing
from harness.hunt.plan import Plan
from harness.judging.results import CaseResult, Check, Grade, Outcome
from harness.scenario import Expect
from harness.search.strategies import Space
from reference_impl.framing import FramingName
from reference_impl.payload import PayloadName
from reference_impl.report import Accepted, ConsumerReport


def space(framing: str, payload: str, **settings: object) -> Space:
    """A ``Space`` from plain names."""
    return Space(FramingName(framing), PayloadName(payload), **settings)  # type: ignore[arg-type]


CLEAN = ConsumerReport(
    "MESSAGE_COMPLETE", False, accepted=tuple(Accepted.of(b"m%d" % i) for i in range(3))
)
EXPECT = Expect(verdict="MESSAGE_COMPLETE", complete=False, accepted_messages=3)


def result(
    outcome: Outcome = Outcome.PASS,
    report: ConsumerReport | None = CLEAN,
    *,
    checks: tuple[Check, ...] = (),
    diagnosis: str = "",
    grade: Grade | None = None,
    connections: int = 1,
    first_byte_s: float = 0.0,
    duration_s: float = 0.0,
) -> CaseResult:
    """A result; ``connections`` of them, the first byte written at ``first_byte_s``."""
    timeline = Timeline()
    for number in range(1, connections + 1):
        timeline.wrote(first_byte_s, number, "downstream", b"x")
    return CaseResult(
        case_id="hunted",
        scenario="hunted",
        file="",
        line=0,
        seed=0,
        outcome=outcome,
        diagnosis=diagnosis,
        checks=checks,
        framing="ndjson",
        payload="messages",
        fault_kinds=(),
        expected="",
        params=(),
        duration_s=duration_s,
        report=report,
        timeline=timeline,
        grade=grade,
    )


def passed(plan: Plan) -> Judged:
    return Judged(plan, Standing.PASS, result(), result(), EXPECT)


def failed(plan: Plan, key: str = "violation: I1") -> Judged:
    mine = result(Outcome.VIOLATION, checks=(Check("I1", False, "never sent"),), diagnosis=key)
    return Judged(plan, Standing.FAILURE, result(), mine, EXPECT, key)


def rule(fails: Callable[[Plan], str | None]) -> Callable[[Plan], Judged]:
    """A check that fails a plan with the key ``fails(plan)`` returns (None: passes), and
    records every plan it was asked about in ``.asked``."""
    asked: list[Plan] = []

    def check(plan: Plan) -> Judged:
        asked.append(plan)
        key = fails(plan)
        return passed(plan) if key is None else failed(plan, key)

    check.asked = asked  # type: ignore[attr-defined]
    return check


def killed(plan: Plan) -> str | None:
    """The made-up bug: any kill."""
    hit = any(isinstance(f, Kill) and f.kind == "kill" for f in plan.faults)
    return "fail: verdict" if hit else None


def killed_or_corrupt(plan: Plan) -> str | None:
    """Two made-up bugs with different diagnoses."""
    if any(isinstance(f, Corrupt) for f in plan.faults):
        return "violation: I1"
    return killed(plan)
