"""index.html in a real headless Chromium (Debian's ``chromium``, driven by Playwright): it
loads without console errors or requests, shows the totals of results.json, and filters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from tests.reports.conftest import tool

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    chromium = tool("chromium")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=chromium,
            headless=True,
            args=FLAGS,
        )
        yield context
        context.close()


class Loaded:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

    def visible(self) -> int:
        return self.page.locator("details.case:not([hidden])").count()

    def shown(self) -> str:
        return self.page.text_content("#shown") or ""


@pytest.fixture
def loaded(browser: BrowserContext, report_dir: Path) -> Iterator[Loaded]:
    page = browser.new_page()
    view = Loaded(page)
    page.goto((report_dir / "index.html").as_uri())
    yield view
    page.close()


@pytest.fixture(scope="module")
def document(report_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((report_dir / "results.json").read_text("utf-8"))
    return loaded


def test_loads_clean_and_offline(loaded: Loaded, report_dir: Path) -> None:
    assert loaded.page.title() == "tearline report: 15 cases, 4 not passed"
    assert loaded.console == []
    assert loaded.errors == []
    assert loaded.requests == [(report_dir / "index.html").as_uri()]


def test_totals_match_results_json(loaded: Loaded, document: dict[str, Any]) -> None:
    totals = document["totals"]
    for outcome in ("pass", "fail", "violation", "no_verdict", "inconclusive", "error"):
        assert loaded.page.text_content(f'[data-total="{outcome}"]') == str(totals[outcome])
    assert loaded.visible() == totals["cases"] == 15
    assert loaded.shown() == "15 of 15 cases shown"


def test_outcome_filter(loaded: Loaded, document: dict[str, Any]) -> None:
    page = loaded.page
    page.click('[data-filter-outcome="fail"]')
    assert loaded.visible() == document["totals"]["fail"] == 1
    assert page.locator("details.case:not([hidden]) .name").all_text_contents() == [
        "mixed::wrong-expectation"
    ]
    page.click('[data-filter-outcome="no_verdict"]')
    assert loaded.shown() == "2 of 15 cases shown"
    page.click('[data-filter-outcome="fail"]')
    assert page.locator("details.case:not([hidden]) .name").all_text_contents() == ["mixed::hung"]
    assert page.get_attribute('[data-filter-outcome="no_verdict"]', "aria-pressed") == "true"
    page.click("#clear")
    assert loaded.visible() == 15
    assert loaded.console == [] and loaded.errors == []


def test_search_and_matrix(loaded: Loaded) -> None:
    page = loaded.page
    page.fill("#search", "cut-sweep")
    assert loaded.visible() == 7
    page.fill("#search", "CUT-SWEEP[OFFSET=150]")
    assert loaded.shown() == "1 of 15 cases shown"
    page.fill("#search", "")
    page.click('button.cell[data-framing="sse"][data-family="kill"]')
    assert page.locator("details.case:not([hidden]) .name").all_text_contents() == [
        "mixed::rst-in-chunk"
    ]
    assert page.text_content("#cell-filter") == "sse \N{MULTIPLICATION SIGN} kill"
    page.click('button.cell[data-framing="sse"][data-family="kill"]')  # again: off
    assert loaded.visible() == 15


def test_sweep_cell_opens_its_case(loaded: Loaded) -> None:
    page = loaded.page
    page.click('[data-filter-outcome="error"]')
    assert loaded.visible() == 1
    page.click('svg.strip a[href="#case-9"]')
    page.wait_for_function("location.hash === '#case-9'")
    assert page.evaluate("document.getElementById('case-9').open") is True
    assert loaded.visible() == 15  # the filter that hid it was cleared
    assert loaded.console == [] and loaded.errors == []
