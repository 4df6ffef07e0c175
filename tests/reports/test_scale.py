"""The reports of a synthetic run of 10^4 cases (``synthetic.py``): the page stays within its
size goals, loads from ``file://`` in headless Chromium without errors or outside requests,
finds a case by id, filters by outcome, and opens a failing case's details (with its drawing)
from its detail file. Only sizes and behaviour are asserted, never time: the timing goals are
``benchmarks/bench_reports.py``'s."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext

from harness.judging.results import CaseResult
from harness.reports import shapes
from harness.reports.details import chunk_name
from harness.reports.drawing import timeline_drawing
from harness.reports.summary import totals
from tests.reports.test_browser import Loaded

MB = 1_000_000
PAGE_ROWS = 200


@pytest.fixture
def view(browser: BrowserContext, synthetic_dir: Path) -> Iterator[Loaded]:
    page = browser.new_page()
    try:
        yield Loaded(page, synthetic_dir).load()
    finally:
        page.close()


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def test_the_page_stays_small(synthetic_dir: Path) -> None:
    """index.html under 2 MB; the page with all its data (every case's details) under 3 MB, an
    eighth of the folder goal: the rest is results.json, junit.xml and the pcaps."""
    assert size(synthetic_dir / "index.html") < 2 * MB
    assert size(synthetic_dir / "index.html") + size(synthetic_dir / "details") < 3 * MB
    assert len(list((synthetic_dir / "details").glob("*.js"))) == 1 + 100  # index + chunks


def test_the_whole_folder_stays_under_26_mb(synthetic_dir: Path) -> None:
    """10^4 library-like cases: page, details, results.json, junit.xml and pcaps together. The
    goal is 25 MB; the per-case keys of 2026-12-02 (``index``, ``undetectable``, ``missed``,
    ``startup_s``, ``wire_complete``, ``target``) took it to 25.5 MB (``docs/reports.md``)."""
    assert size(synthetic_dir) < 26 * MB


def test_passing_cases_carry_no_segments(synthetic_dir: Path) -> None:
    document = json.loads((synthetic_dir / "results.json").read_text("utf-8"))
    assert document["detail"] == "failing"
    listed = [c["outcome"] != "pass" for c in document["cases"]]
    assert [c["timeline"]["segments"] is not None for c in document["cases"]] == listed


def test_loads_clean_with_a_bounded_list(view: Loaded) -> None:
    assert view.clean(), (view.console, view.errors, view.failed)
    assert view.files() == ["index.html", "details/cases.js"]
    assert len(view.names()) == PAGE_ROWS
    assert view.shown() == "10,000 of 10,000 cases match · 1\N{EN DASH}200 listed"
    view.page.click("#next")
    # the page draws the next rows in a frame of its own: wait for them, not for a time
    view.page.wait_for_function(
        "document.querySelector('#shown').textContent.endsWith('201\u2013400 listed')"
    )
    assert view.shown().endswith("201\N{EN DASH}400 listed") and len(view.names()) == PAGE_ROWS
    assert view.page.locator("#failing article.case").count() == 50


def test_search_finds_a_case(view: Loaded, synthetic: Sequence[CaseResult]) -> None:
    wanted = synthetic[7777].case_id
    view.page.fill("#search", wanted.upper())
    assert view.names() == [wanted]
    assert view.shown() == "1 of 10,000 cases match"
    part = "websocket-tokens"
    view.page.fill("#search", part)
    expected = [r.case_id for r in synthetic if part in r.case_id.lower()]
    assert view.names() == expected[:PAGE_ROWS]
    assert view.shown().startswith(f"{len(expected):,} of 10,000 cases match")


def test_outcome_filters(view: Loaded, synthetic: Sequence[CaseResult]) -> None:
    counts = totals(synthetic)
    view.page.click('[data-filter-outcome="violation"]')
    assert view.shown() == f"{counts['violation']} of 10,000 cases match"
    view.page.click('[data-filter-outcome="error"]')
    matching = [r.case_id for r in synthetic if r.outcome in ("violation", "error")]
    assert view.names() == matching[:PAGE_ROWS]
    view.page.click('[data-filter-outcome="violation"]')
    view.page.click('[data-filter-outcome="error"]')
    assert view.shown().startswith("10,000 of 10,000")


def test_a_failing_case_opens_from_its_detail_file(
    view: Loaded, synthetic: Sequence[CaseResult]
) -> None:
    index = next(i for i, r in enumerate(synthetic) if r.outcome == "fail" and i > 4000)
    view.page.fill("#search", synthetic[index].case_id)
    view.open_case(index)
    assert f"details/{chunk_name(index)}.js" in view.files()
    drawn = view.page.locator(f"#case-{index} .body svg.timeline > *")
    expected = shapes.data(timeline_drawing(synthetic[index]))["items"]
    assert drawn.count() == len(expected) > 5
    facts = view.page.text_content(f"#case-{index} table.facts") or ""
    assert f"--seed {synthetic[index].seed}" in facts
    assert view.page.locator(f"#case-{index} table.checks tr.ko").count() == 1
    assert view.clean()
