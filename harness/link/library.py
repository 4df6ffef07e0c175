"""Scenario files to the cases a run runs: load, validate, expand, select (``-k``).

Below the command line and above the scenario model and the link (expanding a sweep to the end
of a stream asks the prepared link), so the command, the pytest fixtures and ``tearline
clients`` share it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.link.reference import prepared_link
from harness.scenario import Case, Library, ScenarioError, load_library
from harness.scenario.loader import loaded


def load_cases(paths: Sequence[str], select: str = "") -> list[Case]:
    """Load, validate and expand, all or nothing: raises ScenarioError listing the problems of
    every file (a warning each is a ``ScenarioFormatWarning``) / SelectionError."""
    library = load_library(paths, prepared_link, select=select)
    loaded(*library.loads)  # raises, and warns
    return list(library.cases)


def cases_of_files(paths: Sequence[str], select: str = "", *, strict: bool = False) -> Library:
    """Load, validate and expand each file on its own: the cases of the files that load, and
    the problems of those that do not (``harness.scenario.files.load_library``)."""
    return load_library(paths, prepared_link, select=select, strict=strict)


__all__ = ["Library", "ScenarioError", "cases_of_files", "load_cases"]
