"""index.html without a browser: self-contained, escaped, one section per case."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import Markup

from harness.judging.judge import Check
from harness.judging.results import CaseResult
from harness.judging.timeline import Timeline
from harness.reports.html import MAX_FAULT_ROWS, case_view, check_rows, glance, matrix
from tests.reports.conftest import by_name


class Links(HTMLParser):
    """Every URL-bearing attribute, and every element, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        for name, value in attrs:
            if name in ("src", "href", "action", "data", "poster", "srcset"):
                self.urls.append((tag, name, value or ""))


@pytest.fixture(scope="module")
def page(report_dir: Path) -> str:
    return (report_dir / "index.html").read_text("utf-8")


@pytest.fixture(scope="module")
def parsed(page: str) -> Links:
    links = Links()
    links.feed(page)
    return links


def test_nothing_is_fetched(parsed: Links, page: str) -> None:
    assert "default-src 'none'" in page
    for tag, name, url in parsed.urls:
        if tag == "svg" or (tag, name) == ("link", "href"):
            assert url in ("http://www.w3.org/2000/svg", "data:,")  # a namespace, an empty icon
        else:
            assert url.startswith(("#", "pcaps/")), (tag, name, url)
    assert not [t for t, attrs in parsed.tags if t in ("img", "iframe", "object", "embed")]
    assert not [attrs for t, attrs in parsed.tags if t == "script" and "src" in attrs]


def test_scenario_text_is_escaped(page: str) -> None:
    assert "&lt;script&gt;alert(&#34;not markup&#34;)&lt;/script&gt; &amp; co" in page
    assert '<script>alert("not markup")' not in page


def test_one_section_per_case_failing_ones_open(
    parsed: Links, results: Sequence[CaseResult]
) -> None:
    sections = [attrs for tag, attrs in parsed.tags if tag == "details"]
    assert [s["id"] for s in sections] == [f"case-{i}" for i in range(len(results))]
    assert [s["data-outcome"] for s in sections] == [r.outcome for r in results]
    assert [("open" in s) for s in sections] == [r.outcome != "pass" for r in results]
    pcaps = [url for tag, name, url in parsed.urls if url.startswith("pcaps/")]
    assert len(pcaps) == 14  # every case but the harness error reached the proxy


def test_glance_says_where_the_stream_ended(results: Sequence[CaseResult]) -> None:
    result = by_name(results, "reconnect")
    assert glance(result) == (
        f"connection 1: {result.timeline.legs[(1, 'downstream')].written:,} of "
        f"{result.wire_bytes:,} B to the consumer, then FIN; "
        f"connection 2: {result.wire_bytes:,} of {result.wire_bytes:,} B to the consumer, "
        "then FIN"
    )
    assert glance(by_name(results, "missing-frame")) == "no bytes reached the consumer"


def test_matrix_counts(results: Sequence[CaseResult]) -> None:
    grid = matrix(results)
    assert grid.framings == ("length-prefixed", "ndjson", "sse", "websocket")
    assert grid.families == ("no fault", "kill", "reconnect", "split", "stall")
    counts = {key: (cell.passed, cell.failed) for key, cell in grid.cells.items()}
    assert counts == {
        ("sse", "no fault"): (1, 0),
        ("sse", "kill"): (1, 0),
        ("ndjson", "kill"): (0, 2),
        ("length-prefixed", "reconnect"): (1, 0),
        ("websocket", "kill"): (0, 1),
        ("length-prefixed", "stall"): (0, 1),
        ("websocket", "split"): (1, 0),
        ("length-prefixed", "kill"): (7, 0),
    }


def test_long_fault_lists_are_cut_in_the_page(results: Sequence[CaseResult]) -> None:
    timeline = Timeline()
    for i in range(MAX_FAULT_ROWS + 10):
        timeline.fault(i / 1000, 1, "downstream", "slice", i, "1 B")
    result = dataclasses.replace(results[0], timeline=timeline)
    view = case_view(0, result, None, Markup())
    assert str(view.faults).count("<tr>") == MAX_FAULT_ROWS and view.faults_more == 10
    second = (
        "<tr><td>1.0</td><td>1</td><td>downstream</td><td>slice</td><td>1</td><td>1 B</td></tr>"
    )
    assert second in view.faults


def test_table_cells_are_escaped(results: Sequence[CaseResult]) -> None:
    check = Check("I1", False, "<b>fused</b> & 'split'")
    assert check_rows([check]) == (
        '<tr class="ko"><th>I1</th><td>\N{BALLOT X}</td>'
        "<td>&lt;b&gt;fused&lt;/b&gt; &amp; &#x27;split&#x27;</td></tr>"
    )
