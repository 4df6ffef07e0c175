"""Shared by the report tests: one small mixed run (every outcome but ``violation``, a reconnect,
a sweep; reports written once, with every case's pcap), a synthetic run of 10^4 cases
(``synthetic``) with its reports, one headless Chromium and one headless Firefox."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext

from harness.artifacts.writer import write_reports
from harness.cli.scenario import load_cases
from harness.judging.results import CaseResult
from harness.running.execute import run_all
from tests.reports.chromium import chromium
from tests.reports.firefox import Firefox, firefox
from tests.reports.synthetic import synthetic_results

DATA = Path(__file__).parent / "data"
MIXED = DATA / "mixed.yaml"
COMMAND = ("tearline", "run", str(MIXED), "--report", "out", "--pcap", "all")
SYNTHETIC_CASES = 10_000


def tool(name: str) -> str:
    """The path of a program the tests need; CI installs it, so missing is a failure."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (apt-get install chromium firefox-esr tshark jq)")
    return path


@pytest.fixture(scope="session")
def results() -> Sequence[CaseResult]:
    return run_all(load_cases([str(MIXED)]))


@pytest.fixture(scope="session")
def report_dir(results: Sequence[CaseResult], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    write_reports(results, str(out), pcap="all", elapsed_s=1.25, command=COMMAND)
    return out


@pytest.fixture(scope="session")
def synthetic() -> Sequence[CaseResult]:
    return synthetic_results(SYNTHETIC_CASES)


@pytest.fixture(scope="session")
def synthetic_dir(
    synthetic: Sequence[CaseResult], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("synthetic")
    write_reports(synthetic, str(out), pcap="failing", elapsed_s=60.0, command=["tearline"])
    return out


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    with chromium(tmp_path_factory.mktemp("chromium-profile"), tool("chromium")) as context:
        yield context


@pytest.fixture(scope="session")
def firefox_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Firefox]:
    with firefox(tmp_path_factory.mktemp("firefox-profile"), tool("firefox-esr")) as browser:
        yield browser


def by_name(results: Sequence[CaseResult], scenario: str) -> CaseResult:
    return next(r for r in results if r.scenario == scenario)
