"""index.html in a real headless Chromium (Debian's ``chromium``, driven by Playwright), on the
small mixed run: it loads from ``file://`` without console errors, blocked or outside requests,
shows the totals of results.json, filters and searches the case list, and opens a case's
details from its detail file. The 10^4-case run: ``test_scale.py``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from harness.judging.results import CaseResult
from harness.reports.caseview import glance
from tests.reports.chromium import open_report


class Loaded:
    """A report page, with everything it logged and requested."""

    def __init__(self, page: Page, folder: Path) -> None:
        self.page = page
        self.folder = folder
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.failed: list[str] = []
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", lambda r: self.failed.append(r.url))

    def load(self, name: str = "index.html") -> Loaded:
        open_report(self.page, self.folder / name)
        return self

    def names(self) -> list[str]:
        """The case ids listed, in order."""
        return self.page.locator("#rows .case .name").all_text_contents()

    def shown(self) -> str:
        return self.page.text_content("#shown") or ""

    def open_case(self, index: int) -> None:
        """Click a listed case and wait for its drawing; if none comes, say what the case's
        body shows and what the page logged (a bare timeout told nothing, once, in CI)."""
        summary = self.page.locator(f"#case-{index} .summary")
        summary.click()
        if summary.get_attribute("aria-expanded") != "true":  # the list was drawn anew under it
            summary.click()
        try:
            self.page.wait_for_selector(f"#case-{index} .body svg.timeline", timeout=60_000)
        except PlaywrightTimeout as err:
            body = self.page.locator(f"#case-{index} .body").text_content()
            raise AssertionError(
                f"case {index} drew no timeline: its body {body!r}; console {self.console}, "
                f"errors {self.errors}, failed requests {self.failed}"
            ) from err

    def files(self) -> list[str]:
        """What was requested, relative to the report folder (all of it must be inside)."""
        base = self.folder.as_uri() + "/"
        assert all(url.startswith(base) for url in self.requests), self.requests
        return [url.removeprefix(base) for url in self.requests]

    def clean(self) -> bool:
        return self.console == [] and self.errors == [] and self.failed == []


def loaded_page(browser: BrowserContext, folder: Path) -> Iterator[Loaded]:
    page = browser.new_page()
    try:
        yield Loaded(page, folder).load()
    finally:
        page.close()


@pytest.fixture
def loaded(browser: BrowserContext, report_dir: Path) -> Iterator[Loaded]:
    yield from loaded_page(browser, report_dir)


@pytest.fixture(scope="module")
def document(report_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((report_dir / "results.json").read_text("utf-8"))
    return loaded


def test_loads_clean_and_offline(loaded: Loaded) -> None:
    assert loaded.page.title() == "tearline report: 15 cases, 4 not passed"
    assert loaded.clean(), (loaded.console, loaded.errors, loaded.failed)
    assert loaded.files() == ["index.html", "details/cases.js"]


def test_totals_match_results_json(loaded: Loaded, document: dict[str, Any]) -> None:
    totals = document["totals"]
    for outcome in ("pass", "fail", "violation", "no_verdict", "inconclusive", "error"):
        assert loaded.page.text_content(f'[data-total="{outcome}"]') == str(totals[outcome])
    assert len(loaded.names()) == totals["cases"] == 15
    assert loaded.shown() == "15 of 15 cases match"
    failing = loaded.page.locator("#failing article.case")
    assert failing.count() == 4 and failing.locator("svg.timeline").count() == 4


def test_outcome_filter(loaded: Loaded, document: dict[str, Any]) -> None:
    page = loaded.page
    page.click('[data-filter-outcome="fail"]')
    assert loaded.names() == ["mixed::wrong-expectation"]
    assert document["totals"]["fail"] == 1
    page.click('[data-filter-outcome="no_verdict"]')
    assert loaded.shown() == "2 of 15 cases match"
    page.click('[data-filter-outcome="fail"]')
    assert loaded.names() == ["mixed::hung"]
    assert page.get_attribute('[data-filter-outcome="no_verdict"]', "aria-pressed") == "true"
    page.click("#clear")
    assert len(loaded.names()) == 15
    assert loaded.clean()


def test_search_and_matrix(loaded: Loaded) -> None:
    page = loaded.page
    page.fill("#search", "cut-sweep")
    assert len(loaded.names()) == 7
    page.fill("#search", "CUT-SWEEP[OFFSET=150]")
    assert loaded.names() == ["mixed::cut-sweep[offset=150]"]
    assert loaded.shown() == "1 of 15 cases match"
    page.fill("#search", "")
    page.click('button.cell[data-framing="sse"][data-family="kill"]')
    assert loaded.names() == ["mixed::rst-in-chunk"]
    assert page.text_content("#filter-pill") == "sse \N{MULTIPLICATION SIGN} kill"
    page.click('button.cell[data-framing="sse"][data-family="kill"]')  # again: off
    assert len(loaded.names()) == 15


def test_a_case_opens_with_its_drawing_from_its_detail_file(
    loaded: Loaded, results: Sequence[CaseResult]
) -> None:
    page = loaded.page
    result = results[3]  # mixed::reconnect: two connections (unless a loaded machine cut it short)
    loaded.open_case(3)
    body = page.locator("#case-3 .body")
    connections = sorted({c for c, _ in result.timeline.legs})
    labels = body.locator("svg.timeline text.conn-label").all_text_contents()
    assert labels == [f"connection {c}" for c in connections] != []
    assert body.locator(".glance").text_content() == glance(result)
    assert body.locator("table.checks tr.ok").count() == sum(c.ok is True for c in result.checks)
    assert f"--seed {result.seed}" in (body.locator("table.facts").text_content() or "")
    if result.timeline.faults:
        assert body.locator("table.faults td").nth(3).text_content() == "reconnect"
    assert loaded.files() == ["index.html", "details/cases.js", "details/0000.js"]
    page.click("#case-3 .summary")  # folds again
    assert body.is_hidden()
    assert loaded.clean()


def test_data_is_shown_as_text_never_as_markup(loaded: Loaded) -> None:
    loaded.open_case(0)  # mixed::clean: its description holds a script element
    source = loaded.page.text_content("#case-0 .source pre") or ""
    assert '<script>alert("not markup")</script> & co' in source
    assert loaded.page.locator("script").count() == 1  # only the page's own
    assert loaded.clean()


def test_strip_column_opens_its_case(loaded: Loaded) -> None:
    page = loaded.page
    page.click('[data-filter-outcome="error"]')
    assert len(loaded.names()) == 1
    strip = page.locator('svg.strip[data-scenario="8"]')
    column = float(strip.get_attribute("data-column") or 0)
    strip.hover(position={"x": column * 2.5, "y": 8})  # the third column: offset=300
    hover = page.locator("#scenario-8 .strip-hover")
    expect(hover).to_have_text("offset=300 → ERR_ZPARQL_STREAM_TRUNCATED (pass)")
    strip.click(position={"x": column * 2.5, "y": 8})
    page.wait_for_function("location.hash === '#case-10'")
    page.wait_for_selector("#case-10 .body svg.timeline")
    assert len(loaded.names()) == 15  # the filter that hid it was cleared
    assert loaded.clean()


def test_a_scenario_lists_its_cases(loaded: Loaded) -> None:
    loaded.page.click('button[data-scenario="8"]')
    assert loaded.names() == [f"mixed::cut-sweep[offset={o}]" for o in range(0, 1050, 150)]
    assert loaded.page.text_content("#filter-pill") == "scenario cut-sweep"


def test_a_link_to_a_case_opens_it(browser: BrowserContext, report_dir: Path) -> None:
    page = browser.new_page()
    try:
        view = Loaded(page, report_dir)
        open_report(page, report_dir / "index.html")
        page.goto((report_dir / "index.html").as_uri() + "#case-5")  # a hash change
        page.wait_for_selector("#case-5 .body svg.timeline")
        assert view.clean()
    finally:
        page.close()


def test_every_load_carries_the_nonce(browser: BrowserContext, report_dir: Path) -> None:
    """Firefox treats a ``file:`` page as an opaque origin, so ``'self'`` allows nothing there
    and the nonce must carry every script: the same page with ``'self'`` taken out of its
    policy still loads its index and a case."""
    html = (report_dir / "index.html").read_text("utf-8")
    policy = re.search(r'content="(default-src[^"]*)"', html)
    assert policy is not None and "script-src 'self' 'nonce-" in policy.group(1)
    (report_dir / "nonce-only.html").write_text(html.replace("script-src 'self' ", "script-src "))
    page = browser.new_page()
    try:
        view = Loaded(page, report_dir).load("nonce-only.html")
        view.open_case(9)
        assert view.clean(), (view.console, view.failed)
    finally:
        page.close()
