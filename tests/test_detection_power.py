"""Detection power: the scenario library catches broken consumers (issue 4).

A harness that passes a broken consumer is worse than none. ``tests/broken/`` holds small
consumer programs, each with one realistic bug (``tests/broken/catalogue.py``). This test runs
the scenario library against every one of them, exactly as a team runs it against its own
program (``tearline run scenarios/ --consumer ... --framing ... --payload ...``), and asserts:

- the correct reference consumer, run as an external program with the command the contract
  page gives (``docs/consumer-contract.md``, read from it), passes every selected case: so a
  failure below is the bug's, not the harness's, and the contract as written passes the library;
- every broken consumer is graded ``failed`` on at least one case (what CI reads: a consumer
  graded ``strict`` or ``non-strict`` everywhere passes), with a diagnosis that names the
  invariant (I1..I6) or the expectation it broke;
- the consumers that are right in their own way (``catalogue.CORRECT``: fail-closed where the
  reference is bold) are graded ``failed`` nowhere.

Which cases: the library without its big offset sweeps (``scenarios/sweeps/``), plus the
proposals in ``tests/broken/scenarios/`` (cases the library lacked; ``tests/broken/README.md``);
then ``tests/broken/selection.py`` keeps, for each consumer, the cases whose settings it honours,
over its framings and payloads, one per scenario. Cases that the in-process reference consumer
fails too are the library's problem and are not counted (they are listed). The catch rate table
(caught / run, and the first diagnosis) is printed, and recorded as the ``catch_rates``
property in JUnit XML.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from harness.cli.scenario import load_cases, retarget
from harness.judging.results import CaseResult, Grade
from harness.running.execute import RunSettings, run_all
from harness.scenario import Case
from tests.broken.catalogue import BrokenConsumer, broken_consumers, correct_consumers
from tests.broken.selection import cases_for

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios"
BIG_SWEEPS = ("sweeps",)  # folders of scenarios/ left out to keep the runtime down
PROPOSALS = ROOT / "tests" / "broken" / "scenarios"
REFERENCE = "reference (tearline consume)"
CONTRACT = ROOT / "docs" / "consumer-contract.md"
#: a diagnosis that names what broke: an invariant, or the scenario's expectation
NAMES_A_RULE = re.compile(r"\bI[1-6]\b|\bexpected\b")


def documented_command() -> str:
    """The contract page's ``tearline consume ...`` command, run as this interpreter's."""
    (block,) = re.findall(r"```sh\n(tearline consume .*?)```", CONTRACT.read_text(), re.DOTALL)
    line = " ".join(block.replace("\\\n", " ").split())
    return line.replace("tearline ", f"{sys.executable} -m harness.cli ", 1)


def caught(result: CaseResult) -> bool:
    """Graded failed: what CI fails (a case the harness could not run or prove is no catch)."""
    return result.grade is Grade.FAILED


#: faults that make a case last (stalls wait, slow consumers wait); run them side by side
SLOW_FAULTS = frozenset({"stall", "slow_consumer", "latency", "throttle"})


@dataclass(frozen=True, slots=True)
class Planned:
    consumer: str
    case: Case


@dataclass(frozen=True, slots=True)
class Row:
    """One consumer's line of the catch-rate table. A case counts as a catch only when the
    reference program passed the same case: otherwise the case, not the consumer, is wrong."""

    consumer: str
    run: int
    caught: tuple[CaseResult, ...]
    #: failed here, but the reference failed the same case too: not a catch
    unfair: tuple[CaseResult, ...]
    #: neither passed nor failed (inconclusive: the fault did not happen; error)
    other: tuple[CaseResult, ...]
    #: every result of the consumer's selected cases
    results: tuple[CaseResult, ...] = ()

    @property
    def first(self) -> str:
        """The first catch, an invariant break (the strongest evidence) before a failed
        expectation."""
        if not self.caught:
            return "-"
        best = min(self.caught, key=lambda r: r.outcome != "violation")
        return f"{best.case_id}: {best.diagnosis}"


def library_paths() -> list[str]:
    folders = sorted(
        p
        for p in LIBRARY.iterdir()
        if p.is_dir() and p.name not in BIG_SWEEPS and any(p.glob("*.y*ml"))
    )
    files = sorted(LIBRARY.glob("*.y*ml"))
    proposals = [PROPOSALS] if any(PROPOSALS.glob("*.y*ml")) else []
    return [str(p) for p in [*folders, *files, *proposals]]


def plan() -> list[Planned]:
    """Every broken (and correct) consumer's cases, then the reference program on all of them
    (once each)."""
    cases = load_cases(library_paths())
    runs: list[Planned] = []
    consumers: list[BrokenConsumer] = [*broken_consumers(), *correct_consumers()]
    for consumer in consumers:
        chosen = cases_for(cases, consumer.speaks, consumer.honours)
        runs += [Planned(consumer.name, retarget(c, consumer.command, None)) for c in chosen]
    union = {item.case.case_id: item.case for item in runs}
    command = documented_command()
    runs += [Planned(REFERENCE, retarget(c, command, None)) for c in union.values()]
    return runs


def library_problems(outcomes: list[tuple[Planned, CaseResult]]) -> dict[str, CaseResult]:
    """The cases the reference program failed that the in-process reference consumer fails
    too: the scenario (or the harness) is wrong, and the library's own tests say so. Those are
    not selected: a broken consumer "caught" by one proves nothing."""
    failed = [i.case for i, r in outcomes if i.consumer == REFERENCE and r.outcome != "pass"]
    originals = [retarget_off(case) for case in failed]
    return {r.case_id: r for r in run_all(originals, RunSettings(jobs=2)) if r.outcome != "pass"}


def retarget_off(case: Case) -> Case:
    """The case with the in-process reference consumer."""
    link = case.scenario.link
    link = replace(link, consumer=replace(link.consumer, command=None))
    return replace(case, scenario=replace(case.scenario, link=link))


def is_slow(case: Case) -> bool:
    return any(f.kind in SLOW_FAULTS for f in case.scenario.faults)


def run_plan(planned: list[Planned]) -> list[tuple[Planned, CaseResult]]:
    """Run everything on two cores. Slow cases go together, so that a batch of quick cases
    never waits for one slow case (``run_all`` runs batches of neighbours)."""
    order = sorted(range(len(planned)), key=lambda i: is_slow(planned[i].case))
    results = run_all([planned[i].case for i in order], RunSettings(jobs=2))
    by_index = dict(zip(order, results, strict=True))
    return [(planned[i], by_index[i]) for i in range(len(planned))]


def table(outcomes: list[tuple[Planned, CaseResult]], excluded: Collection[str] = ()) -> list[Row]:
    """One row per consumer, over the selected cases (all but ``excluded``)."""
    passed_by_reference = {
        r.case_id for item, r in outcomes if item.consumer == REFERENCE and r.outcome == "pass"
    }
    results: dict[str, list[CaseResult]] = {}
    for item, result in outcomes:
        if result.case_id not in excluded:
            results.setdefault(item.consumer, []).append(result)
    rows = []
    for name, mine in results.items():
        failed = [r for r in mine if caught(r)]
        rows.append(
            Row(
                name,
                len(mine),
                tuple(r for r in failed if r.case_id in passed_by_reference),
                tuple(r for r in failed if r.case_id not in passed_by_reference),
                tuple(r for r in mine if r.grade is None),
                tuple(mine),
            )
        )
    return rows


def render(rows: list[Row]) -> str:
    """The catch-rate table: caught / run per consumer (not counting cases the reference
    failed too, shown as ``+n``), and the first diagnosis."""
    lines = [f"{'consumer':30} {'caught':>11}  first diagnosis"]
    for row in rows:
        rate = f"{len(row.caught)}/{row.run}" + (f" +{len(row.unfair)}" if row.unfair else "")
        lines.append(f"{row.consumer:30} {rate:>11}  {row.first[:150]}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def rows(monkeypatch_module: pytest.MonkeyPatch) -> list[Row]:
    # The broken consumers are modules of this repository: ``python -m tests.broken.<bug>``.
    monkeypatch_module.setenv("PYTHONPATH", str(ROOT))
    outcomes = run_plan(plan())
    excluded = library_problems(outcomes)
    if excluded:
        print(f"\nnot selected: {len(excluded)} cases the in-process reference fails too")
        for result in excluded.values():
            print(f"  {result.case_id}: {result.outcome}: {result.diagnosis[:140]}")
    return table(outcomes, excluded)


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_reference_consumer_passes_every_selected_case(
    rows: list[Row], record_property: Callable[[str, object], None]
) -> None:
    record_property("catch_rates", render(rows))
    print("\n" + render(rows))
    (reference,) = [row for row in rows if row.consumer == REFERENCE]
    failures = [
        f"{r.case_id}: {r.outcome}: {r.diagnosis}" for r in reference.results if not r.passed
    ]
    assert not failures, f"the reference program failed {len(failures)} of {reference.run}:\n" + (
        "\n".join(failures)
    )


@pytest.mark.parametrize("name", [b.name for b in broken_consumers()])
def test_broken_consumer_is_caught(rows: list[Row], name: str) -> None:
    (row,) = [row for row in rows if row.consumer == name]
    named = [r for r in row.caught if NAMES_A_RULE.search(r.diagnosis)]
    assert named, (
        f"{name}: not caught by any of {row.run} cases ({len(row.unfair)} failed only where the"
        f" reference failed too, {len(row.other)} inconclusive or error)"
    )


@pytest.mark.parametrize("name", [c.name for c in correct_consumers()])
def test_a_consumer_right_in_its_own_way_is_never_failed(rows: list[Row], name: str) -> None:
    """Caution is no defect: refusing a result the payload proved once the framing's end does
    not come is ``non-strict`` (``docs/grades.md``), never ``failed``."""
    (row,) = [row for row in rows if row.consumer == name]
    assert [f"{r.case_id}: {r.diagnosis}" for r in row.caught] == []
