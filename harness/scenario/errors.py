"""Scenario mistakes as values: every one is a ``SchemaIssue``; a file with any raises one
``ScenarioError`` carrying all of them.

- ``SchemaIssue(file, line, key_path, message)``: one mistake, rendered ``file:line: key: message``
  (``line`` is 1-based; 0 means "the whole file"; an empty ``key_path`` is left out).
- ``ScenarioError(ValueError)``: raised once per load, after every mistake was collected.

Validation code does not raise these: it adds issues to an ``Issues`` list and carries on, so
that a QA engineer fixes a file in one pass instead of one error per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.errors import ErrorKind, HarnessError, KeyPath, PathPart, render_path

__all__ = ["Issues", "KeyPath", "PathPart", "ScenarioError", "SchemaIssue", "render_path"]


@dataclass(frozen=True, slots=True)
class SchemaIssue:
    """One mistake in a scenario file, with where to look."""

    file: str
    line: int
    key_path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return (
            f"{where}: {self.key_path}: {self.message}"
            if self.key_path
            else f"{where}: {self.message}"
        )


class ScenarioError(HarnessError, ValueError):
    """One or more scenario files are invalid; ``issues`` lists every mistake found."""

    code = ErrorKind.SCENARIO

    def __init__(self, issues: Sequence[SchemaIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))

    def within(self, *prefix: PathPart) -> ScenarioError:
        return self  # its issues already say where they are


@dataclass(slots=True)
class Issues:
    """The collector validation writes to (one per file)."""

    file: str
    items: list[SchemaIssue] = field(default_factory=list)

    def add(self, line: int, path: KeyPath, message: str) -> None:
        self.items.append(SchemaIssue(self.file, line, render_path(path), message))
