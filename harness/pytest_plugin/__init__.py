"""pytest plugin (entry point ``pytest11: tearline``): scenario files as test items.

``pytest scenarios/`` collects every ``*.yaml``/``*.yml`` file under a directory named
``scenarios`` (ini option ``tearline_dirs``), or any such file named on the command line, and
makes one item per case, named like the case id (``cuts.yaml::rst-in-chunk[offset=17]``). So
``-k``, ``--junitxml`` and pytest-xdist's ``-n`` work as for any test. A case that does not pass
fails with its diagnosis, checks and replay command instead of a traceback. A file that does
not load fails one item of its own, and the other files still run. ``--tearline-shard K/N``
keeps the K-th of N shards of the cases (by a hash of the case id, or balanced by a previous
run's durations with ``--tearline-shard-durations``), for splitting a suite over CI jobs. A
file is read in its format version (its own ``format:``, or its folder's ``tearline.yaml``,
which is not collected); a deprecated form in it is a
``ScenarioFormatWarning`` in pytest's warnings summary (``-W error::FutureWarning`` makes it
an error). See ``docs/reports.md``.

The module imports nothing heavy at the top: it is loaded by every pytest run in an environment
where tearline is installed, scenario files or not.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.judging.results import CaseResult
    from harness.pytest_plugin.fixtures import RunningProxy, ScenarioResults
    from harness.scenario import Case

SUFFIXES = (".yaml", ".yml")
#: a folder's settings (``harness.scenario.sources.SETTINGS_NAMES``), never a scenario file
SETTINGS_NAMES = ("tearline.yaml", "tearline.yml")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tearline", "tearline scenario files")
    group.addoption(
        "--tearline-shard",
        default=None,
        metavar="K/N",
        help="run only shard K of N (1-based) of the scenario cases, split by case id hash",
    )
    group.addoption(
        "--tearline-shard-durations",
        default=None,
        metavar="RESULTS_JSON",
        help="balance the shards by the case durations of a previous run's results.json",
    )
    parser.addini(
        "tearline_dirs",
        type="args",
        default=["scenarios"],
        help="names of directories whose YAML files are tearline scenario files",
    )


def _is_scenario_file(file_path: Path, parent: pytest.Collector) -> bool:
    if file_path.suffix not in SUFFIXES or file_path.name in SETTINGS_NAMES:
        return False
    if parent.session.isinitpath(file_path):
        return True  # named on the command line
    names = set(parent.config.getini("tearline_dirs"))
    try:
        folders = file_path.relative_to(parent.config.rootpath).parts[:-1]
    except ValueError:
        folders = file_path.parts[:-1]
    return any(folder in names for folder in folders)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if _is_scenario_file(file_path, parent):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """One scenario file: an item per case, or one failing item when the file is broken.

    Problems are raised from the items, never from ``collect`` (a collection error would stop
    the whole session by default)."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.link.reference import prepared_link  # noqa: PLC0415 - heavy, only when needed
        from harness.scenario import ScenarioError, ScenarioFormatWarning, expand, read_file  # noqa: PLC0415

        load = read_file(self.path)
        for warning in load.warnings:
            warnings.warn_explicit(
                ScenarioFormatWarning(str(warning)),
                ScenarioFormatWarning,
                str(self.path),
                warning.line,
            )
        if load.issues:
            problem = "\n".join(str(issue) for issue in load.issues)
            yield BrokenScenario.from_parent(self, name="invalid", problem=problem)
            return
        for scenario in load.scenarios:
            try:
                cases = expand(scenario, prepared_link)
            except ScenarioError as err:
                yield BrokenScenario.from_parent(self, name=scenario.name, problem=str(err))
                continue
            for case in cases:
                _, _, name = case.case_id.partition("::")
                yield CaseItem.from_parent(self, name=name or case.case_id, case=case)


class CaseFailedError(Exception):
    """A case that did not pass; carries its result for ``repr_failure``."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.diagnosis)
        self.result = result


class ScenarioProblemError(Exception):
    """A scenario file that does not load or expand."""


def failure_text(result: CaseResult) -> str:
    """What a failing item shows: the diagnosis first (it becomes the summary line)."""
    from harness.judging.results import replay_command  # noqa: PLC0415
    from harness.reports.summary import observed_label  # noqa: PLC0415

    lines = [
        f"{result.outcome}: {result.diagnosis}",
        f"  expected  {result.expected or '-'}",
        f"  observed  {observed_label(result)}",
    ]
    marks = {True: "ok", False: "FAIL", None: "-"}
    lines += [f"  {marks[c.ok]:<4} {c.name:<6} {c.evidence}" for c in result.checks]
    lines += [f"  seed      {result.seed}", f"  replay    {replay_command(result)}"]
    return "\n".join(lines)


class CaseItem(pytest.Item):
    """One case of a scenario, run through the harness like ``tearline run`` would."""

    #: No Python function behind a case; plugins that inspect every item's ``obj`` (pytest-trio
    #: in ``trio_mode``) then leave it alone.
    obj: object = None

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        import trio  # noqa: PLC0415

        from harness.running.case import run_case  # noqa: PLC0415

        result = trio.run(run_case, self.case)
        if not result.passed:
            raise CaseFailedError(result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, CaseFailedError):
            return failure_text(excinfo.value.result)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        origin = self.case.scenario.origin
        return self.path, (origin.line - 1 if origin else 0), self.case.case_id


class BrokenScenario(pytest.Item):
    """Stands for a file or scenario that does not load: fails with every problem found."""

    obj: object = None  # as CaseItem.obj

    def __init__(self, *, problem: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem

    def runtest(self) -> None:
        raise ScenarioProblemError(self.problem)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, ScenarioProblemError):
            return self.problem
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.stem}::{self.name}"


def shard_of(case_id: str, shards: int) -> int:
    """0-based shard of a case: SHA-256 of its id, so every machine agrees."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def _parse_shard(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise pytest.UsageError(f"--tearline-shard: expected K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def _balanced(durations_file: str | None, items: list[pytest.Item], n: int) -> dict[str, int]:
    """Each case's 0-based shard balanced by a previous run's durations (``tearline run
    --shard-durations``'s split); empty without a file."""
    if not durations_file:
        return {}
    import json  # noqa: PLC0415 - only when asked

    from harness.scenario.shards import assign  # noqa: PLC0415

    try:
        cases = json.loads(Path(durations_file).read_text("utf-8"))["cases"]
        durations = {str(c["id"]): float(c["duration_s"]) for c in cases}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise pytest.UsageError(
            f"--tearline-shard-durations: {durations_file}: not a tearline results.json ({err})"
        ) from None
    ids = [item.case.case_id for item in items if isinstance(item, CaseItem)]
    return dict(zip(ids, assign(ids, n, durations), strict=True))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    option = config.getoption("--tearline-shard")
    if not option:
        return
    k, n = _parse_shard(option)
    balanced = _balanced(config.getoption("--tearline-shard-durations"), items, n)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        if isinstance(item, CaseItem):
            mine = balanced.get(item.case.case_id, shard_of(item.case.case_id, n)) == k - 1
        elif isinstance(item, BrokenScenario):
            mine = shard_of(item.nodeid, n) == k - 1
        else:
            mine = True  # other tests are not ours to split
        (keep if mine else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# -- fixtures for testing your own clients (docs/python-consumers.md) --------------------------
# Thin here, so that a pytest run without them imports nothing of the harness.
@pytest.fixture
def tearline_proxy() -> Iterator[Callable[..., RunningProxy]]:
    """A factory of fault proxies in front of a service, each stopped after the test
    (``harness.pytest_plugin.fixtures.start_proxy``)."""
    from harness.pytest_plugin.fixtures import proxy_factory  # noqa: PLC0415

    yield from proxy_factory()


@pytest.fixture
def tearline_scenarios() -> Iterator[Callable[..., ScenarioResults]]:
    """Run scenario files against a consumer function
    (``harness.pytest_plugin.fixtures.run_scenarios``)."""
    from harness.pytest_plugin.fixtures import scenario_runner  # noqa: PLC0415

    yield from scenario_runner()
