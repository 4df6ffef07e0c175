"""One small mixed run, shared by the report tests: every outcome but ``violation``, a
reconnect (two connections), a sweep. The reports are written once, with every case's pcap."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.cli.scenario import load_cases
from harness.judging.results import CaseResult
from harness.reports.writer import write_reports
from harness.running.execute import run_all

DATA = Path(__file__).parent / "data"
MIXED = DATA / "mixed.yaml"
COMMAND = ("tearline", "run", str(MIXED), "--report", "out", "--pcap", "all")


def tool(name: str) -> str:
    """The path of a program the tests need; CI installs it, so missing is a failure."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (apt-get install chromium tshark)")
    return path


@pytest.fixture(scope="session")
def results() -> Sequence[CaseResult]:
    return run_all(load_cases([str(MIXED)]), jobs=1)


@pytest.fixture(scope="session")
def report_dir(results: Sequence[CaseResult], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    write_reports(results, str(out), pcap="all", elapsed_s=1.25, command=COMMAND)
    return out


def by_name(results: Sequence[CaseResult], scenario: str) -> CaseResult:
    return next(r for r in results if r.scenario == scenario)
