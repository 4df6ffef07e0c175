"""Scenario files to the cases a run runs: load, validate, expand, select (``-k``).

Below the command line and above the scenario model and the link (expanding a sweep to the end
of a stream asks the prepared link), so the command, the pytest fixtures and ``tearline
clients`` share it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.link.reference import prepared_link
from harness.scenario import Case, expand_all, load_paths
from harness.scenario.selection import matches


def load_cases(paths: Sequence[str], select: str = "") -> list[Case]:
    """Load, validate and expand; raises ScenarioError / SelectionError."""
    cases = expand_all(load_paths(paths), prepared_link)
    return [case for case in cases if matches(select, case.case_id)] if select else cases
