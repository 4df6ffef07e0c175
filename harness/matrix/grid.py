"""The conformance matrix (pure): client and version x scenario family, grade counts, the
worst diagnosis of each cell, and every failure with its replay command.

Built from judged results only (``CaseResult``); ``to_json`` is what ``clients.json`` holds,
and the HTML page (``matrix_html``) renders the same ``Matrix``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

from harness.judging.results import CaseResult, Grade, Outcome, replay_command

#: a cell's columns: the four grades, then the cases that got none (error, inconclusive)
UNGRADED = "ungraded"
COLUMNS: tuple[str, ...] = (*(g.value for g in Grade), UNGRADED)
#: worst first (None: not graded, an error or inconclusive case): a cell's worst diagnosis is
#: from its first case in this order
SEVERITY = (Grade.FAILED, Grade.NON_STRICT, Grade.INFORMATIONAL, None, Grade.STRICT)
OUTCOME_SEVERITY = (Outcome.VIOLATION, Outcome.NO_VERDICT, Outcome.FAIL, Outcome.PASS)
MATRIX_VERSION = 1


@dataclass(frozen=True, slots=True)
class Failure:
    """One case a client failed (or could not be graded on), and how to run it again."""

    case_id: str
    family: str
    outcome: str
    grade: str
    diagnosis: str
    replay: str


@dataclass(frozen=True, slots=True)
class Cell:
    family: str
    counts: dict[str, int]
    #: the diagnosis of the worst case in the cell ('' when all were strict)
    worst: str = ""
    worst_case: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    """One client library (one adapter) across the families it ran."""

    adapter: str
    client: str
    version: str
    how: str
    cells: tuple[Cell, ...]
    totals: dict[str, int]
    failures: tuple[Failure, ...]
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Skipped:
    adapter: str
    note: str


@dataclass(frozen=True, slots=True)
class Matrix:
    rows: tuple[Row, ...]
    skipped: tuple[Skipped, ...] = ()
    command: tuple[str, ...] = ()
    version: int = MATRIX_VERSION

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(sorted({cell.family for row in self.rows for cell in row.cells}))


def family_of(result: CaseResult) -> str:
    parent = PurePath(result.file).parent.name
    return parent or PurePath(result.file).stem or "-"


def column_of(result: CaseResult) -> str:
    return UNGRADED if result.grade is None else result.grade.value


def _rank(result: CaseResult) -> tuple[int, int]:
    grade = SEVERITY.index(result.grade)
    outcome = (
        OUTCOME_SEVERITY.index(result.outcome)
        if result.outcome in OUTCOME_SEVERITY
        else len(OUTCOME_SEVERITY)
    )
    return grade, outcome


def _counts(results: Sequence[CaseResult]) -> dict[str, int]:
    counts = dict.fromkeys(COLUMNS, 0)
    for result in results:
        counts[column_of(result)] += 1
    return counts


def _cell(family: str, results: Sequence[CaseResult]) -> Cell:
    worst = min(results, key=_rank)
    if worst.grade is Grade.STRICT:
        return Cell(family, _counts(results))
    return Cell(family, _counts(results), worst.diagnosis, worst.case_id)


def build_row(
    adapter: str,
    client: str,
    version: str,
    how: str,
    results: Sequence[CaseResult],
    elapsed_s: float = 0.0,
) -> Row:
    by_family: dict[str, list[CaseResult]] = {}
    for result in results:
        by_family.setdefault(family_of(result), []).append(result)
    cells = tuple(_cell(name, by_family[name]) for name in sorted(by_family))
    failures = tuple(
        Failure(
            r.case_id, family_of(r), r.outcome.value, column_of(r), r.diagnosis, replay_command(r)
        )
        for r in sorted(results, key=_rank)
        if r.grade in (Grade.FAILED, None)
    )
    return Row(adapter, client, version, how, cells, _counts(results), failures, elapsed_s)


def to_json(matrix: Matrix) -> str:
    data: dict[str, Any] = asdict(matrix)
    data["families"] = list(matrix.families)
    data["columns"] = list(COLUMNS)
    return json.dumps(data, indent=1, sort_keys=True)
