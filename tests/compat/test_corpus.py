"""The compatibility corpus (``tests/compat/README.md``): files written for earlier states of
the format still validate, with exactly their warnings, and ``tearline upgrade`` turns each
into a file that runs with the same outcomes as its equivalent in today's form.

Each old tree has an equivalent tree: the library snapshots have today's ``scenarios/``, the
hand-written ``deprecated/`` files have ``current/`` (and ``upgraded/``, the bytes ``upgrade``
must write). Outcomes are compared case by case, paired by case id:

- a pair whose scenarios are equal apart from what does not enter a run against the reference
  consumer (description, source, where it is written, ``exclusive``, which only schedules it,
  ``expect.grading``, which only grades other consumers) has the same outcome by construction:
  a case is its scenario and its seed;
- every other pair is run, both sides, and must agree on the outcome, the verdict, whether the
  result was complete and how many messages were accepted;
- a case with no equivalent (its id changed) is run and must pass;
- and one case of each file is run and must pass, the first that has no timed fault, so the
  sample stays quick (about 110 distinct cases; running all 14,800 would take minutes). A file
  whose every case is timed (stalls of seconds) is left out of the sample: its cases are proven
  equal to today's above, or run there.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from harness.judging.results import CaseResult
from harness.link.reference import prepared_link
from harness.running.execute import RunSettings, is_timed, run_all
from harness.scenario import Case, FileLoad, Scenario, expand, read_file, read_text
from harness.scenario.model import Grading
from harness.scenario.sweep import known_size
from harness.scenario.upgrade import upgrade_text

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "tests" / "compat"
WARNINGS = COMPAT / "warnings.txt"


@dataclass(frozen=True)
class Tree:
    """Old files, and where their equivalents in today's form are."""

    old: Path
    equivalent: Path

    def files(self) -> list[Path]:
        return sorted(path.relative_to(self.old) for path in self.old.rglob("*.yaml"))


TREES = {
    "2026-11-29": Tree(COMPAT / "library" / "2026-11-29", ROOT / "scenarios"),
    "2026-12-01": Tree(COMPAT / "library" / "2026-12-01", ROOT / "scenarios"),
    "deprecated": Tree(COMPAT / "deprecated", COMPAT / "current"),
}
FILES = [(name, rel) for name, tree in TREES.items() for rel in tree.files()]


def _id(item: tuple[str, Path]) -> str:
    return f"{item[0]}/{item[1]}"


@cache
def _old(name: str, rel: Path) -> FileLoad:
    return read_file(TREES[name].old / rel)


@cache
def _upgraded(name: str, rel: Path) -> tuple[str, FileLoad]:
    """The upgraded text of an old file, and what it loads to (named like the old file)."""
    path = TREES[name].old / rel
    result = upgrade_text(path.read_text(encoding="utf-8"), str(path))
    assert result.problems == ()
    return result.text, read_text(result.text, str(path))


def _shape(scenario: Scenario) -> Scenario:
    """A scenario without where it is written (an upgrade moves lines)."""
    axes = tuple(dataclasses.replace(axis, line=0) for axis in scenario.sweep)
    return dataclasses.replace(scenario, origin=None, sweep=axes)


def _bare(scenario: Scenario) -> Scenario:
    """A scenario without what does not enter a run against the reference consumer."""
    expect = dataclasses.replace(scenario.expect, grading=Grading())
    return dataclasses.replace(
        _shape(scenario), description="", source=None, exclusive=False, format=None, expect=expect
    )


def _runs_alike(a: Case, b: Case) -> bool:
    """Whether two cases run alike against the reference consumer (see the module)."""
    return a.seed == b.seed and _bare(a.scenario) == _bare(b.scenario)


def test_the_corpus_holds_each_state() -> None:
    counts = {name: len(tree.files()) for name, tree in TREES.items()}
    assert counts == {"2026-11-29": 89, "2026-12-01": 99, "deprecated": 3}
    assert [p.name for p in (COMPAT / "current").glob("*.yaml")] == [
        p.name for p in (COMPAT / "deprecated").glob("*.yaml")
    ]


def test_each_file_validates_with_exactly_its_warnings() -> None:
    found = []
    for name, rel in FILES:
        load = _old(name, rel)
        assert load.issues == (), load.issues
        shown = str(TREES[name].old.relative_to(COMPAT) / rel)
        found += [str(dataclasses.replace(w, file=shown)) for w in load.warnings]
    assert found == WARNINGS.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(("name", "rel"), FILES, ids=[_id(item) for item in FILES])
def test_upgrade_rewrites_only_what_it_reports_and_reads_the_same(name: str, rel: Path) -> None:
    path = TREES[name].old / rel
    old_text = path.read_text(encoding="utf-8")
    result = upgrade_text(old_text, str(path))
    new_text, new = _upgraded(name, rel)
    old = _old(name, rel)
    reported = sorted({change.line for change in result.changes})
    assert reported == sorted({warning.line for warning in old.warnings})
    assert (new.issues, new.warnings) == ((), ())
    assert [_shape(s) for s in new.scenarios] == [_shape(s) for s in old.scenarios]
    again = upgrade_text(new_text, str(path))
    assert (again.text, again.changes, again.problems) == (new_text, (), ())
    if name == "deprecated":  # every form, some over several lines: the exact bytes
        assert new_text == (COMPAT / "upgraded" / rel).read_text(encoding="utf-8")
    else:  # the library's files change on the lines reported, nowhere else
        assert _changed_lines(old_text, new_text) <= set(reported)


def _changed_lines(old: str, new: str) -> set[int]:
    """Lines of ``old`` (from 1) that ``new`` changes, or next to which it inserts."""
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed |= set(range(i1 + 1, i2 + 1)) if i2 > i1 else {i1 + 1}
    return changed


@dataclass(frozen=True)
class Plan:
    """What to run: pairs (upgraded case, equivalent case), cases alone, the sample."""

    pairs: list[tuple[Case, Case]]
    alone: list[Case]
    sample: list[Case]


def _cases(scenarios: tuple[Scenario, ...]) -> Iterator[Case]:
    for scenario in scenarios:
        yield from expand(scenario, prepared_link)


@cache
def _equivalent(path: Path) -> tuple[Scenario, ...] | None:
    if not path.exists():
        return None
    load = read_file(path)
    assert load.issues == ()
    return load.scenarios


def _plan() -> Plan:
    plan = Plan([], [], [])
    for name, rel in FILES:
        _, upgraded = _upgraded(name, rel)
        equivalent = _equivalent(TREES[name].equivalent / rel)
        same = equivalent is not None and list(map(_bare, upgraded.scenarios)) == list(
            map(_bare, equivalent)
        )
        if not same:  # (else every case runs alike, as the scenarios do)
            others = {case.case_id: case for case in _cases(equivalent or ())}
            for case in _cases(upgraded.scenarios):
                other = others.get(case.case_id)
                if other is None:
                    plan.alone.append(case)
                elif not _runs_alike(case, other):
                    plan.pairs.append((case, other))
        quick = next(_quick(upgraded.scenarios), None)
        if quick is not None:
            plan.sample.append(quick)
    return plan


def _quick(scenarios: tuple[Scenario, ...]) -> Iterator[Case]:
    """The cases without a timed fault of the scenarios without one, the scenarios with the
    fewest cases first (a sweep of every byte is made only if nothing smaller is there)."""
    untimed = [scenario for scenario in scenarios if not is_timed(scenario)]
    for scenario in sorted(untimed, key=lambda s: math.prod(known_size(a) for a in s.sweep)):
        yield from (c for c in expand(scenario, prepared_link) if not is_timed(c.scenario))


def _observed(result: CaseResult) -> tuple[object, ...]:
    report = result.report
    if report is None:
        return (result.outcome, None)
    accepted = report.accepted_count if report.accepted_count is not None else len(report.accepted)
    return (result.outcome, report.verdict, report.complete, accepted)


#: scenarios whose expectation a change of the verdict semantics moved (``CHANGELOG.md``,
#: "Verdict semantics"): the old file runs as today's does, and only its expectation is out of
#: date, so its outcome may differ; (file stem, scenario name) -> the change
SEMANTIC_CHANGES = {
    ("stale-buffer-continue", name): "a restart hands on the last attempt's messages only"
    for name in ("restart-explicit-end-framings", "restart-no-end-marker-framings")
} | {
    ("truncation-reconnect-restart", name): "a restart hands on the last attempt's messages only"
    for name in (
        "fin-explicit-end-framings",
        "rst-explicit-end-framings",
        "no-end-marker-framings",
    )
}


#: scenarios whose faults were placed by byte on the consumer's request, which has changed
#: (``CHANGELOG.md``: its ``Host`` names the port): only today's form is held to its outcome
REQUEST_CHANGES = {
    ("request-direction-half-closed", name): "the request's Host names the port"
    for name in ("after-the-sse-request", "after-the-websocket-upgrade")
}


def _key(case: Case) -> tuple[str, str]:
    """The (file stem, scenario name) a case comes from."""
    return case.case_id.split("::")[0], case.scenario.name


def _moved_by_semantics(old: Case, new: Case) -> bool:
    """The pair differs in its expectation alone, and a listed change moved it."""
    key = _key(old)
    moved = dataclasses.replace(old.scenario, expect=new.scenario.expect)
    same_run = old.scenario.expect != new.scenario.expect and _bare(moved) == _bare(new.scenario)
    return key in SEMANTIC_CHANGES and same_run


def test_upgraded_files_run_with_the_outcomes_of_their_equivalents() -> None:
    plan = _plan()
    batch: dict[tuple[str, Scenario, int], Case] = {}
    for case in [*(c for pair in plan.pairs for c in pair), *plan.alone, *plan.sample]:
        batch.setdefault((case.case_id, _shape(case.scenario), case.seed), case)
    keys = list(batch)
    results = dict(zip(keys, run_all([batch[k] for k in keys], RunSettings(2, 8)), strict=True))

    def of(case: Case) -> CaseResult:
        return results[(case.case_id, _shape(case.scenario), case.seed)]

    def observed(old: Case, new: Case) -> tuple[tuple[object, ...], tuple[object, ...]]:
        a, b = _observed(of(old)), _observed(of(new))
        if _key(old) in REQUEST_CHANGES:
            return (), ()  # today's form passes: ``failing`` says so
        return (a[1:], b[1:]) if _moved_by_semantics(old, new) else (a, b)

    unlike = [
        (old.case_id, *observed(old, new))
        for old, new in plan.pairs
        if observed(old, new)[0] != observed(old, new)[1]
    ]
    moved = {_key(old) for old, _ in plan.pairs}
    assert set(SEMANTIC_CHANGES) | set(REQUEST_CHANGES) <= moved  # each is still in the corpus
    changed = SEMANTIC_CHANGES.keys() | REQUEST_CHANGES.keys()
    old_ones = [c for c in [*plan.alone, *plan.sample] if _key(c) not in changed]
    failing = [
        (case.case_id, of(case).outcome, of(case).diagnosis)
        for case in [*(new for _, new in plan.pairs), *old_ones]
        if not of(case).passed
    ]
    counts = (len(plan.pairs), len(plan.alone), len(plan.sample))
    assert (unlike, failing, counts) == ([], [], (42, 6, 168))  # the counts of 2026-12-02
