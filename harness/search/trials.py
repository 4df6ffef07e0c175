"""The shell of a hunt: a plan run as real cases, with the same runner and judge as
``tearline run``.

A plan becomes a scenario (``plan.scenario_of``), expanded against the reference link's prepared
stream (``harness.scenario.expand``, one case: no sweep) and run by
``harness.running.case.run_case``: first with the in-process reference consumer, judged
against nothing but the invariants, whose report becomes the expectation; then with the hunted
consumer (a program or a function), judged against that expectation. One ``trio.run`` per plan:
Hypothesis drives a synchronous test, and each plan's cases share one event loop, the reference
run first (a plan the reference rejects costs no consumer run). A consumer that hangs is killed
at the plan's deadline, like any case's.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass

import trio

from harness.hunt.diagnosis import (
    Judged,
    Standing,
    classify,
    killed_at_deadline,
    reference_standing,
)
from harness.hunt.plan import ANYTHING, Hunted, Plan, expect_from, scenario_of
from harness.judging.results import CaseResult
from harness.link.reference import prepared_link
from harness.running.case import run_case
from harness.scenario import Expect, Scenario, expand
from harness.search.strategies import Space, clean_link
from reference_impl.report import ConsumerReport


def hunted_consumer(command: str | None, function: str | None) -> Hunted | str:
    """The consumer given on the command line, or why it cannot run: a command that does
    not split, names no program or a program that is not there; a function that cannot be
    imported."""
    if function is not None:
        from harness.workers.worker import locate  # noqa: PLC0415 - only when used

        problem = locate(function)
        return f"--consumer-function: {problem}" if problem else Hunted(function=function)
    assert command is not None
    try:
        argv = shlex.split(command)
    except ValueError as err:
        return f"cannot read the consumer command: {err}"
    if not argv:
        return "the consumer command is empty"
    if shutil.which(argv[0]) is None:
        return f"cannot start consumer {argv[0]!r}: no such program"
    return Hunted(command=tuple(argv))


async def run_scenario(scenario: Scenario) -> CaseResult:
    (case,) = expand(scenario, prepared_link)
    return await run_case(case)


@dataclass(slots=True)
class LiveCheck:
    """Judges plans by running them: ``check(plan)`` is the hunt's ``Check``."""

    consumer: Hunted
    seed: int
    #: hold the consumer to the reference's exact conclusion (not to its grade)
    strict: bool = False
    #: the reference consumer's report on the clean link (the effect target's baseline)
    clean: ConsumerReport | None = None

    async def judge(self, plan: Plan) -> Judged:
        reference = await run_scenario(scenario_of(plan, ANYTHING, seed=self.seed))
        decided = reference_standing(plan, reference)
        if decided is not None:
            return decided
        assert reference.report is not None  # reference_standing decides a missing report
        expect = expect_from(reference.report, plan.faults)
        mine = await run_scenario(scenario_of(plan, expect, seed=self.seed, consumer=self.consumer))
        return classify(plan, reference, mine, expect, self.clean, strict=self.strict)

    def check(self, plan: Plan) -> Judged:
        return trio.run(self.judge, plan)

    def consumer_result(self, plan: Plan, expect: Expect) -> CaseResult:
        """Only the consumer's run (the replay of a written scenario)."""
        scenario = scenario_of(plan, expect, seed=self.seed, consumer=self.consumer)
        return trio.run(run_scenario, scenario)


@dataclass(frozen=True, slots=True)
class Preflight:
    """The clean link (no fault), run before the hunt."""

    judged: Judged
    #: why the consumer cannot be hunted (it gave no report where nothing went wrong)
    problem: str = ""


def preflight(check: LiveCheck, space: Space) -> Preflight:
    """Run the clean link; remember the reference's report as the baseline."""
    plan = Plan(clean_link(space), ())
    judged = check.check(plan)
    if judged.standing is Standing.REFERENCE or judged.standing is Standing.INVALID:
        why = f"the reference consumer fails the clean link: {judged.reference.diagnosis}"
        return Preflight(judged, why)
    check.clean = judged.reference.report
    mine = judged.consumer
    hung = mine is not None and killed_at_deadline(mine, plan.deadline_ms)  # no accident
    if mine is not None and mine.report is None and not hung:
        return Preflight(judged, f"the consumer gives no report: {mine.diagnosis}")
    if judged.standing is Standing.FAILURE and not hung:  # only if it happens again
        again = check.check(plan)
        if again.standing is not Standing.FAILURE or again.key != judged.key:
            return Preflight(again)
    return Preflight(judged)
