"""The search, on made-up checks: generation, shrinking, budgets, distinct failures, the
reference gate, the database, flaky failures. Pure and fast: no case is run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.faults import Corrupt, Kill
from harness.faults.position import Position
from harness.hunt.diagnosis import Judged, Standing
from harness.hunt.plan import Plan
from harness.scenario import MessagesConfig
from harness.search.engine import Event, Hunt, HuntResult, HuntSettings, database_key
from reference_impl.report import ConsumerReport
from tests.hunt.fakes import failed, killed, killed_or_corrupt, passed, result, rule, space

SPACE = space("ndjson", "messages")


def hunt(
    check: Callable[[Plan], Judged],
    *,
    seed: int = 7,
    events: list[Event] | None = None,
    **settings: object,
) -> HuntResult:
    config = HuntSettings(seed=seed, **settings)  # type: ignore[arg-type]
    return Hunt(SPACE, check, config, (events if events is not None else []).append).run()


def test_the_first_failure_is_shrunk_to_one_simple_fault() -> None:
    found = hunt(rule(killed), budget=200).found
    assert len(found) == 1
    (fault,) = found[0].plan.faults
    assert isinstance(fault, Kill) and fault.kind == "kill" and fault.how == "rst"
    assert fault.at == Position(frame=1)
    assert fault.direction == "downstream" and fault.connection == 1
    # the shortest stream the strategy has: one generated message of 16 bytes
    assert found[0].plan.link.messages == MessagesConfig(count=1, size_bytes=16)
    assert found[0].key == "fail: verdict"
    assert found[0].reproduced


def test_a_fixed_seed_makes_the_same_hunt() -> None:
    first, second = rule(killed), rule(killed)
    one, two = hunt(first, seed=11, budget=100), hunt(second, seed=11, budget=100)
    assert first.asked == second.asked  # type: ignore[attr-defined]
    assert [f.plan for f in one.found] == [f.plan for f in two.found]
    assert one.found[0].cases_until == two.found[0].cases_until


def test_nothing_found_stops_at_the_budget() -> None:
    check = rule(lambda _plan: None)
    outcome = hunt(check, budget=40)
    assert outcome.found == [] and outcome.budget_spent
    assert outcome.cases == 40
    assert len(set(check.asked)) == 40  # type: ignore[attr-defined]


def test_only_the_same_diagnosis_counts_while_shrinking() -> None:
    found = hunt(rule(killed_or_corrupt), budget=200).found
    assert len(found) == 1
    (key,) = {f.key for f in found}
    kinds = {fault.kind for fault in found[0].plan.faults}
    assert kinds == ({"corrupt"} if key == "violation: I1" else {"kill"})


def test_all_collects_failures_distinct_by_diagnosis() -> None:
    found = hunt(rule(killed_or_corrupt), budget=300, all_failures=True).found
    assert sorted(f.key for f in found) == ["fail: verdict", "violation: I1"]
    for each in found:
        assert len(each.plan.faults) == 1


def test_a_plan_the_reference_fails_is_reported_never_as_the_consumer_s() -> None:
    def check(plan: Plan) -> Judged:
        if any(isinstance(f, Corrupt) for f in plan.faults):  # the consumer fails it too
            bad = result(diagnosis="I1: the reference accepted a fused message")
            return Judged(plan, Standing.REFERENCE, bad, failed(plan).consumer, key="violation: I1")
        return passed(plan)

    outcome = hunt(check, budget=60)
    assert [j.key for j in outcome.reference_problems] == ["violation: I1"]  # once
    assert outcome.found == []


def test_an_invalid_plan_is_discarded() -> None:
    def check(plan: Plan) -> Judged:
        if any(isinstance(f, Corrupt) for f in plan.faults):
            return Judged(plan, Standing.INVALID, result())
        return passed(plan)

    outcome = hunt(check, budget=60)
    assert outcome.discarded > 0 and outcome.found == [] and outcome.reference_problems == []


def test_a_failure_that_does_not_happen_again_is_not_counted() -> None:
    runs: dict[Plan, int] = {}

    def check(plan: Plan) -> Judged:
        runs[plan] = runs.get(plan, 0) + 1
        return failed(plan) if killed(plan) and runs[plan] == 1 else passed(plan)

    events: list[Event] = []
    outcome = hunt(check, budget=120, events=events)
    assert outcome.found == []
    assert any(e.kind == "flaky" for e in events)


def test_the_shrink_budget_bounds_the_shrink() -> None:
    events: list[Event] = []
    outcome = hunt(rule(killed), budget=200, shrink_budget=0, events=events)
    (found,) = outcome.found
    assert found.shrink_steps == 0 and found.plan == found.first


def test_progress_reports_cases_the_failure_and_the_shrink() -> None:
    events: list[Event] = []
    hunt(rule(killed), budget=200, events=events)
    kinds = [e.kind for e in events]
    assert kinds.count("failure") == 1 and kinds[-1] == "shrunk"
    assert kinds.index("failure") < kinds.index("shrunk")
    assert kinds.count("case") == events[-1].cases


def test_the_database_replays_a_found_plan_first(tmp_path: Path) -> None:
    first = hunt(rule(killed), seed=3, budget=200, database=tmp_path)
    assert first.found and first.found[0].cases_until > 1
    again = hunt(rule(killed), seed=99, budget=200, database=tmp_path)
    assert again.found[0].cases_until == 1
    assert again.found[0].plan == first.found[0].plan


def test_the_database_is_keyed_by_consumer_and_link() -> None:
    key = database_key("my-consumer", SPACE)
    assert key == database_key("my-consumer", SPACE)
    assert key != database_key("other-consumer", SPACE)
    assert key != database_key("my-consumer", space("sse", "messages"))


def test_the_effect_target_sees_the_reference_report() -> None:
    moved = ConsumerReport("STALE_PARTIAL_BUFFER", False)

    def check(plan: Plan) -> Judged:
        judged = passed(plan)
        return Judged(plan, judged.standing, result(report=moved), judged.consumer, effect=2.0)

    assert hunt(check, budget=20).found == []
