"""index.html without a browser: nothing fetched but its own data files, a strict policy whose
hash and nonce match the page, escaped, the failing cases in full, one line per scenario."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import Markup

from harness.evidence.timeline import Timeline
from harness.judging.results import CaseResult, Check, Outcome
from harness.reports import html
from harness.reports.caseview import MAX_FAULT_ROWS, facts, glance
from harness.reports.html import MAX_EXPANDED, case_view, check_rows, matrix, render
from tests.reports.conftest import by_name


class Links(HTMLParser):
    """Every URL-bearing attribute, every element, and the text of style and script."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("style", "script") else None
        for name, value in attrs:
            if name in ("src", "href", "action", "data", "poster", "srcset"):
                self.urls.append((tag, name, value or ""))

    def handle_data(self, data: str) -> None:
        if self._in:
            self.inline[self._in] = self.inline.get(self._in, "") + data

    def handle_endtag(self, tag: str) -> None:
        self._in = None


@pytest.fixture(scope="module")
def page(report_dir: Path) -> str:
    return (report_dir / "index.html").read_text("utf-8")


@pytest.fixture(scope="module")
def parsed(page: str) -> Links:
    links = Links()
    links.feed(page)
    return links


def policy(page: str) -> str:
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert found is not None
    return found.group(1)


def test_nothing_is_fetched_but_its_data(parsed: Links, page: str) -> None:
    for tag, name, url in parsed.urls:
        if tag == "svg" or (tag, name) == ("link", "href"):
            assert url in ("http://www.w3.org/2000/svg", "data:,")  # a namespace, an empty icon
        else:
            assert url.startswith(("#", "pcaps/")), (tag, name, url)
    assert not [t for t, attrs in parsed.tags if t in ("img", "iframe", "object", "embed")]
    assert not [attrs for t, attrs in parsed.tags if t == "script" and "src" in attrs]
    assert [t for t, _ in parsed.tags].count("script") == 1


def test_the_policy_is_strict_and_matches_the_page(parsed: Links, page: str) -> None:
    csp = policy(page)
    nonce = next(a["nonce"] for t, a in parsed.tags if t == "script")
    style = base64.b64encode(hashlib.sha256(parsed.inline["style"].encode()).digest()).decode()
    assert csp == (
        f"default-src 'none'; script-src 'self' 'nonce-{nonce}'; style-src 'sha256-{style}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    assert nonce and len(nonce) >= 22 and "unsafe" not in csp
    assert parsed.inline["script"] == html.inline_text(*html.SCRIPTS)


def test_each_report_has_its_own_nonce(results: Sequence[CaseResult]) -> None:
    def nonce_of(nonce: str) -> str:
        page = render(
            results, pcaps={}, sources={}, created="x", command=[], elapsed_s=0, nonce=nonce
        )
        return policy(page)

    assert "'nonce-abc'" in nonce_of("abc") and "'nonce-abc'" not in nonce_of("xyz")


def test_inline_code_cannot_end_its_element() -> None:
    for names in (("report.css",), html.SCRIPTS):
        text = html.inline_text(*names).lower()
        assert "</" not in text and "<!--" not in text


def test_text_is_escaped(results: Sequence[CaseResult]) -> None:
    hostile = dataclasses.replace(
        by_name(results, "wrong-expectation"),
        case_id='x"><script>alert(1)</script>',
        diagnosis="<b>fused</b>",
    )
    source = {(hostile.file, hostile.line): "description: <script>alert(2)</script> & co"}
    page = render(
        [hostile], pcaps={}, sources=source, created="x", command=["<i>"], elapsed_s=0, nonce="n"
    )
    assert "<script>alert" not in page and "<b>fused" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt; &amp; co" in page
    assert "&lt;b&gt;fused&lt;/b&gt;" in page


def test_failing_cases_in_full_one_line_per_scenario(
    parsed: Links, results: Sequence[CaseResult]
) -> None:
    articles = [a for t, a in parsed.tags if t == "article"]
    failing = [i for i, r in enumerate(results) if r.outcome != "pass"]
    assert [a["id"] for a in articles] == [f"failing-{i}" for i in failing]
    rows = [a["id"] for t, a in parsed.tags if t == "div" and a.get("class") == "scenario"]
    assert rows == [f"scenario-{n}" for n in range(9)]
    strips = [a for t, a in parsed.tags if t == "svg" and a.get("class") == "strip"]
    assert [(s["data-scenario"], s["data-column"]) for s in strips] == [("8", "18")]
    pcaps = [url for tag, name, url in parsed.urls if url.startswith("pcaps/")]
    reached = [i for i in failing if results[i].timeline.legs]  # not the harness error
    assert pcaps == [f"pcaps/{i:04d}-{results[i].case_id.replace('::', '-')}.pcap" for i in reached]
    assert not [t for t, a in parsed.tags if t == "details"]  # no block per case any more


def test_only_so_many_failing_cases_in_full(results: Sequence[CaseResult]) -> None:
    failing = dataclasses.replace(by_name(results, "wrong-expectation"), outcome=Outcome.FAIL)
    many = [failing] * (MAX_EXPANDED + 5)
    page = render(many, pcaps={}, sources={}, created="x", command=[], elapsed_s=0, nonce="n")
    assert page.count("<article ") == MAX_EXPANDED
    assert f"Not passed: {MAX_EXPANDED + 5} cases" in page


def test_glance_says_where_the_stream_ended(results: Sequence[CaseResult]) -> None:
    result = by_name(results, "reconnect")
    first, second = (result.timeline.end_of(n, "downstream") for n in (1, 2))
    assert first is not None and second is not None
    # the cut stops the proxy's reading too: it had read more than it wrote, less than the
    # producer's whole stream
    assert first.written < first.read < second.read == result.wire_bytes
    assert result.wire_complete
    assert glance(result) == (
        f"connection 1: {first.written:,} B to the consumer of {first.read:,} B read from the "
        f"producer, then FIN; connection 2: {second.written:,} B to the consumer of "
        f"{second.read:,} B read from the producer, then FIN; "
        f"the producer's whole stream: {result.wire_bytes:,} B"
    )
    assert glance(by_name(results, "missing-frame")) == "no bytes reached the consumer"


def test_observed_is_red_only_where_it_differs_from_the_expectation(
    results: Sequence[CaseResult],
) -> None:
    def shown(name: str) -> dict[str, str]:
        return {label: cls for label, _, cls in facts(by_name(results, name))}

    # inconclusive, yet the consumer concluded what was expected
    assert by_name(results, "never-fires").outcome == "inconclusive"
    assert (shown("never-fires")["observed"], shown("never-fires")["accepted"]) == ("", "")
    assert shown("wrong-expectation")["observed"] == "ko"
    assert shown("hung")["observed"] == "ko"  # no report: nothing observed
    assert shown("clean")["observed"] == ""


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


def test_table_cells_are_escaped() -> None:
    check = Check("I1", False, "<b>fused</b> & 'split'")
    assert check_rows([check]) == (
        '<tr class="ko"><th>I1</th><td>\N{BALLOT X}</td>'
        "<td>&lt;b&gt;fused&lt;/b&gt; &amp; &#x27;split&#x27;</td></tr>"
    )
