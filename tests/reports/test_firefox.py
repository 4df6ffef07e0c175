"""index.html in a real headless Firefox (Debian's ``firefox-esr``, over WebDriver BiDi:
``firefox.py``), where a ``file:`` page is an opaque origin and only the report's nonce lets
its scripts run: the small mixed run and the 10^4-case run load without script errors, policy
violations, failed loads or network requests, show the totals of results.json, filter and
search, and open a case's details (with its drawing) from its detail file, by a click and by
a link. The same behaviour in Chromium: ``test_browser.py``, ``test_scale.py``."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from harness.judging.results import CaseResult
from harness.reports import shapes
from harness.reports.details import chunk_name
from harness.reports.drawing import timeline_drawing
from tests.reports.firefox import READY, Firefox, Tab


class Report:
    """A report open in a Firefox tab, with the few questions the tests ask of it."""

    def __init__(self, tab: Tab, folder: Path) -> None:
        self.tab, self.folder = tab, folder

    def names(self) -> list[str]:
        return self.tab.texts("#rows .case .name")

    def shown(self) -> str:
        return self.tab.text("#shown") or ""

    def files(self) -> list[str]:
        """What the page's elements loaded, relative to the report folder (all inside it)."""
        base = self.folder.as_uri() + "/"
        loaded = self.tab.loaded()
        assert all(url.startswith(base) for url in loaded), loaded
        return [url.removeprefix(base) for url in loaded]

    def open_case(self, index: int) -> None:
        self.tab.click(f"#case-{index} .summary")
        self.tab.wait_for(f"#case-{index} .body svg.timeline")

    def clean(self) -> bool:
        return self.tab.problems() == [] and self.tab.requests() == []


@contextlib.contextmanager
def opened(browser: Firefox, folder: Path, fragment: str = "") -> Iterator[Report]:
    tab = browser.new_tab()
    try:
        tab.goto((folder / "index.html").as_uri() + fragment)
        yield Report(tab, folder)
    finally:
        tab.close()


@pytest.fixture
def report(firefox_browser: Firefox, report_dir: Path) -> Iterator[Report]:
    with opened(firefox_browser, report_dir) as view:
        yield view


@pytest.fixture
def large(firefox_browser: Firefox, synthetic_dir: Path) -> Iterator[Report]:
    with opened(firefox_browser, synthetic_dir) as view:
        yield view


def test_loads_clean_and_offline(report: Report) -> None:
    assert report.tab.evaluate("() => document.title") == "tearline report: 15 cases, 4 not passed"
    assert report.tab.problems() == []
    assert report.tab.requests() == []
    assert report.files() == ["details/cases.js"]


def test_totals_match_results_json(report: Report, report_dir: Path) -> None:
    totals = json.loads((report_dir / "results.json").read_text("utf-8"))["totals"]
    for outcome in ("pass", "fail", "violation", "no_verdict", "inconclusive", "error"):
        assert report.tab.text(f'[data-total="{outcome}"]') == str(totals[outcome])
    assert len(report.names()) == totals["cases"] == 15
    assert report.tab.count("#failing article.case svg.timeline") == 4


def test_filter_and_search(report: Report) -> None:
    tab = report.tab
    tab.click('[data-filter-outcome="fail"]')
    assert report.names() == ["mixed::wrong-expectation"]
    tab.click('[data-filter-outcome="fail"]')
    tab.fill("#search", "CUT-SWEEP[OFFSET=150]")
    assert report.names() == ["mixed::cut-sweep[offset=150]"]
    assert report.shown() == "1 of 15 cases match"
    tab.fill("#search", "")
    assert len(report.names()) == 15
    assert report.clean()


def test_a_case_opens_with_its_drawing_from_its_detail_file(
    report: Report, results: Sequence[CaseResult]
) -> None:
    report.open_case(3)  # mixed::reconnect
    connections = sorted({c for c, _ in results[3].timeline.legs})
    labels = report.tab.texts("#case-3 .body svg.timeline text.conn-label")
    assert labels == [f"connection {c}" for c in connections] != []
    facts = report.tab.text("#case-3 .body table.facts") or ""
    assert f"--seed {results[3].seed}" in facts
    assert report.files() == ["details/cases.js", "details/0000.js"]
    assert report.clean()


def test_a_link_to_a_case_opens_it(firefox_browser: Firefox, report_dir: Path) -> None:
    with opened(firefox_browser, report_dir, "#case-5") as report:
        report.tab.wait_for("#case-5 .body svg.timeline")
        assert report.clean()


def test_the_large_report_loads_and_opens_a_failing_case(
    large: Report, synthetic: Sequence[CaseResult]
) -> None:
    assert large.shown() == "10,000 of 10,000 cases match · 1\N{EN DASH}200 listed"
    index = next(i for i, r in enumerate(synthetic) if r.outcome == "fail" and i > 4000)
    large.tab.fill("#search", synthetic[index].case_id)
    assert large.names() == [synthetic[index].case_id]
    large.open_case(index)
    expected = shapes.data(timeline_drawing(synthetic[index]))["items"]
    assert large.tab.count(f"#case-{index} .body svg.timeline > *") == len(expected) > 5
    assert large.files() == ["details/cases.js", f"details/{chunk_name(index)}.js"]
    assert large.clean()


def test_without_its_nonce_the_page_is_blocked_and_said_so(
    firefox_browser: Firefox, report_dir: Path, tmp_path: Path
) -> None:
    """Why the nonce (and why this test file): Chromium lets a ``file:`` page's ``'self'``
    match the scripts beside it, Firefox does not. The same page with its script's nonce
    taken out runs nowhere in Firefox, and the tab says why (a policy violation, no index)."""
    html = (report_dir / "index.html").read_text("utf-8")
    nonce = re.search(r'<script nonce="([^"]+)"', html)
    assert nonce is not None
    shutil.copytree(report_dir / "details", tmp_path / "details")
    (tmp_path / "index.html").write_text(html.replace(f' nonce="{nonce[1]}"', ""), "utf-8")
    tab = firefox_browser.new_tab()
    try:
        tab.goto((tmp_path / "index.html").as_uri(), ready=False)
        assert tab.count(READY) == 0
        assert [p.split(" ")[:2] for p in tab.problems()] == [["csp:", "script-src-elem"]]
    finally:
        tab.close()
