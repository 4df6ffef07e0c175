"""How a run schedules its cases (issue #8): ``--in-flight`` cases at once per worker, timed
cases one at a time, ``exclusive: true`` scenarios alone after all the others."""

from __future__ import annotations

import argparse

import pytest
import trio
import trio.testing

from harness.cli.main import build_parser
from harness.judging.results import CaseResult
from harness.running import execute
from harness.running.case import error_result
from harness.running.execute import RunSettings, run_all
from harness.scenario import Case, expand, load_text
from tests.scenario.toys import FixedShape

LINK = "{framing: ndjson, payload: messages}"


def _cases(text: str) -> list[Case]:
    return [case for s in load_text(text, "s.yaml") for case in expand(s, lambda _: FixedShape(1))]


def _scenario(name: str, count: int, extra: str = "") -> str:
    return (
        f"- name: {name}\n  description: d\n  link: {LINK}\n"
        f"  expect: {{verdict: MESSAGE_COMPLETE}}\n  sweep: {{seed: {{from: 0, to: {count}}}}}\n"
        + extra
    )


class Tracker:
    """A stand-in for ``run_case``: records which cases run at the same time."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.most = 0
        self.order: list[str] = []
        self.alongside: dict[str, set[str]] = {}

    async def __call__(
        self, case: Case, seed: int | None = None, *, startup_ms: float = 0.0
    ) -> CaseResult:
        self.running.add(case.case_id)
        self.most = max(self.most, len(self.running))
        for other in self.running:
            self.alongside.setdefault(other, set()).update(self.running - {other})
        # every case the runner can start now is started (and blocked here) before this one ends
        await trio.testing.wait_all_tasks_blocked()
        self.running.discard(case.case_id)
        self.order.append(case.case_id)
        return error_result(case, seed, "not run")


@pytest.fixture
def tracker(monkeypatch: pytest.MonkeyPatch) -> Tracker:
    fake = Tracker()
    monkeypatch.setattr(execute, "run_case", fake)
    return fake


def test_in_flight_caps_the_cases_at_once(tracker: Tracker) -> None:
    cases = _cases(_scenario("many", 8))
    results = run_all(cases, RunSettings(jobs=1, in_flight=3))
    assert [r.case_id for r in results] == [c.case_id for c in cases]
    assert tracker.most == 3


def test_an_exclusive_scenario_runs_alone_after_the_others(tracker: Tracker) -> None:
    """...and what the caller does in the background is stopped before they start."""
    cases = _cases(_scenario("shared", 6) + _scenario("alone", 2, "  exclusive: true\n"))
    ran_before: list[int] = []
    settings = RunSettings(jobs=1, in_flight=8)
    results = run_all(cases, settings, before_alone=lambda: ran_before.append(len(tracker.order)))
    alone = [c.case_id for c in cases if c.scenario.exclusive]
    assert [r.case_id for r in results] == [c.case_id for c in cases]  # in case order
    assert ran_before == [6]
    assert tracker.order[-2:] == alone
    assert all(not tracker.alongside.get(case_id) for case_id in alone)
    assert tracker.most == 6


def test_timed_cases_run_one_at_a_time(tracker: Tracker) -> None:
    stall = "  faults: [{kind: stall, at: {offset: 1}, duration_ms: 5}]\n"
    cases = _cases(_scenario("stalls", 4, stall))
    run_all(cases, RunSettings(jobs=1, in_flight=8))
    assert tracker.most == 1


def test_in_flight_is_an_option_of_run() -> None:
    parser: argparse.ArgumentParser = build_parser()
    args = parser.parse_args(["run", "x.yaml", "--in-flight", "3"])
    assert args.in_flight == 3
    assert parser.parse_args(["run", "x.yaml"]).in_flight == 8
