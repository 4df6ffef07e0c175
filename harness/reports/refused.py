"""The scenario files a run left out (pure): each with every problem that kept it out.

``tearline run`` runs the files that load and reports the others as errors in every report:
``results.json`` lists them under ``refused_files``, ``junit.xml`` gives each an ``<error>``
test case in a suite of its own, the page names each at the top. A joined run of shards lists
them once (every shard reads the same files).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.config.issues import SchemaIssue

#: the junit suite that holds the refused files (a case id never looks like it)
JUNIT_SUITE = "scenario files not run"


@dataclass(frozen=True, slots=True)
class RefusedFile:
    """One file that did not load or expand, and its problems (in the order found)."""

    file: str
    problems: tuple[SchemaIssue, ...]

    @property
    def where(self) -> str:
        """``file:line`` of the first problem (``file`` when it has no line)."""
        line = self.problems[0].line if self.problems else 0
        return f"{self.file}:{line}" if line else self.file

    @property
    def text(self) -> str:
        """Every problem on a line of its own, as ``validate`` prints it."""
        return "\n".join(map(str, self.problems))


def refused_files(problems: Iterable[SchemaIssue]) -> tuple[RefusedFile, ...]:
    """The problems grouped by file, files in the order of their first problem."""
    by_file: dict[str, list[SchemaIssue]] = {}
    for problem in problems:
        by_file.setdefault(problem.file, []).append(problem)
    return tuple(RefusedFile(file, tuple(found)) for file, found in by_file.items())


def record(refused: RefusedFile) -> dict[str, Any]:
    """A refused file in ``results.json``."""
    first = refused.problems[0].line if refused.problems else 0
    return {
        "file": refused.file,
        "line": first,
        "problems": [
            {"line": p.line, "key_path": p.key_path, "message": p.message} for p in refused.problems
        ],
    }


def from_record(data: Mapping[str, Any]) -> RefusedFile:
    """``record`` read back (a shard's ``results.json``)."""
    file = str(data["file"])
    problems = tuple(
        SchemaIssue(file, int(p["line"]), str(p["key_path"]), str(p["message"]))
        for p in data["problems"]
    )
    return RefusedFile(file, problems)


def records(refused: Sequence[RefusedFile]) -> list[dict[str, Any]]:
    return [record(r) for r in refused]
