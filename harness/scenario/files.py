"""Many scenario files at once, each on its own: a file that is wrong is reported and left out,
and the others are read, expanded and run.

- ``read_paths(paths)``: a ``FileLoad`` per file found under the paths (files, and folders
  searched recursively for ``*.yaml`` and ``*.yml`` in sorted order), and one per path that
  names none (missing, an empty folder) or per ``tearline.yaml`` that is wrong. Two files whose
  case ids would collide: the later one fails.
- ``load_paths(paths)``: all or nothing, the scenarios or one ScenarioError listing the issues
  of every file.
- ``load_library(paths, shape_of)``: the cases of the files that load and expand, and the
  problems of those that do not (``tearline run``, ``validate``, ``list``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath

from harness.config.issues import ScenarioError, SchemaIssue
from harness.scenario.cases import (
    MAX_RUN_CASES,
    Case,
    RunLimitError,
    ShapeOf,
    check_run_size,
    expand_within,
)
from harness.scenario.formats import FORMAT_RULES
from harness.scenario.loader import FaultRegistry, FileLoad, StrPath, loaded, read_file
from harness.scenario.model import Origin, Scenario
from harness.scenario.selection import matches
from harness.scenario.settings import SettingsFinder
from harness.scenario.sources import SETTINGS_NAMES, mode_of, scenario_files
from harness.scenario.versions import FormatRules


def read_paths(
    paths: Iterable[StrPath] | StrPath,
    *,
    faults: FaultRegistry | None = None,
    formats: FormatRules | None = None,
) -> list[FileLoad]:
    """Every file under ``paths``, read on its own (see the module)."""
    if isinstance(paths, str | os.PathLike):  # one path, not an iterable of characters
        paths = [paths]
    finder = SettingsFinder(formats if formats is not None else FORMAT_RULES)
    files, loads = find_files(paths)
    for file in files:
        if file.name in SETTINGS_NAMES:  # named on the command line: checked, nothing to run
            _, problems = finder.read(str(file))
            loads.append(FileLoad(str(file), (), tuple(problems)))
        else:
            loads.append(read_file(file, faults=faults, formats=formats, settings=finder))
    loads += _wrong_settings(finder, {load.file for load in loads})
    return _colliding_case_ids(loads)


def load_paths(
    paths: Iterable[StrPath] | StrPath, *, faults: FaultRegistry | None = None
) -> list[Scenario]:
    """The scenarios of files and directories. Raises one ScenarioError listing the mistakes
    of all files; each warning is a ``ScenarioFormatWarning``."""
    return loaded(*read_paths(paths, faults=faults))


def find_files(paths: Iterable[StrPath]) -> tuple[list[Path], list[FileLoad]]:
    """The files the paths name (each once, the first mention first), and a failed load for
    each path that names none."""
    files: list[Path] = []
    problems: list[FileLoad] = []
    for path in map(Path, paths):
        mode, problem = mode_of(path)
        if problem is not None:
            problems.append(_problem(str(path), problem))
        elif stat.S_ISDIR(mode):
            found, unreadable = scenario_files(path)
            problems += [_problem(str(p), why) for p, why in unreadable]
            if not found and not unreadable:
                problems.append(_problem(str(path), "no .yaml or .yml files in this directory"))
            files += found
        else:
            files.append(path)
    unique = {os.path.realpath(file): file for file in reversed(files)}  # first mention wins
    return [file for file in files if unique[os.path.realpath(file)] is file], problems


def _problem(file: str, message: str) -> FileLoad:
    return FileLoad(file, (), (SchemaIssue(file, 0, "", message),))


def _wrong_settings(finder: SettingsFinder, listed: set[str]) -> list[FileLoad]:
    """The settings files that governed a file and are wrong, each reported once."""
    return [
        FileLoad(file, (), tuple(problems))
        for file, (_, problems) in finder.read_so_far().items()
        if problems and file not in listed
    ]


def _colliding_case_ids(loads: list[FileLoad]) -> list[FileLoad]:
    """Case ids are ``<file stem>::<name>``: two files with the same stem must not share
    names. The later file fails."""
    first: dict[tuple[str, str], Origin] = {}
    checked = []
    for load in loads:
        issues = []
        for scenario in load.scenarios:
            assert scenario.origin is not None
            key = (PurePath(scenario.origin.file).stem, scenario.name)
            if key in first:
                other = first[key]
                message = (
                    f"same file name and scenario name as {other.file}:{other.line}, "
                    "so their case ids would collide"
                )
                origin = scenario.origin
                issues.append(SchemaIssue(origin.file, origin.line, "name", message))
        if not issues:
            first |= {
                (PurePath(load.file).stem, s.name): s.origin for s in load.scenarios if s.origin
            }
        checked.append(load.failed(*issues) if issues else load)
    return checked


@dataclass(frozen=True, slots=True)
class Library:
    """The cases of the files that load and expand, and every file's load."""

    cases: tuple[Case, ...]
    #: every file, the failed ones with their issues (expansion problems included)
    loads: tuple[FileLoad, ...]

    @property
    def problems(self) -> list[SchemaIssue]:
        return [issue for load in self.loads for issue in load.issues]

    @property
    def warnings(self) -> list[SchemaIssue]:
        return [warning for load in self.loads for warning in load.warnings]

    @property
    def failed(self) -> list[FileLoad]:
        """The files left out."""
        return [load for load in self.loads if not load.ok]


def load_library(
    paths: Iterable[StrPath] | StrPath,
    shape_of: ShapeOf,
    *,
    select: str = "",
    strict: bool = False,
    faults: FaultRegistry | None = None,
    formats: FormatRules | None = None,
    limit: int | None = None,
) -> Library:
    """The cases of every file that loads and expands (selected by ``-k`` ``select``); with
    ``strict`` a file with a warning fails too. A file's expansion problems make it fail;
    more cases than a run may have (``MAX_RUN_CASES``) is a RunLimitError for the run."""
    loads = read_paths(paths, faults=faults, formats=formats)
    if strict:
        loads = [load.strictly() for load in loads]
    limit = MAX_RUN_CASES if limit is None else limit
    check_run_size([scenario for load in loads for scenario in load.scenarios], limit)
    cases: list[Case] = []
    expanded = []
    for load in loads:
        made: list[Case] = []
        try:
            for scenario in load.scenarios:
                made += expand_within(scenario, shape_of, limit, len(cases) + len(made))
        except RunLimitError:
            raise
        except ScenarioError as err:
            expanded.append(load.failed(*err.issues))
            continue
        cases += made
        expanded.append(load)
    kept = [case for case in cases if matches(select, case.case_id)] if select else cases
    return Library(tuple(kept), tuple(expanded))
