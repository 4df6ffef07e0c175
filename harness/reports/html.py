"""``index.html``: the page a person opens. A summary that stays small at 10^5 cases: totals,
the framing x fault matrix, the failing cases in full (up to ``MAX_EXPANDED``), every scenario
folded to one line with its sweep strip, and a case list the page's script fills from the
case index in ``details/`` (search, filters, a bounded number of rows; a case's details load
on demand, see ``details``).

This module turns results into plain view records; ``templates/index.html.j2`` lays them out
(Jinja2, autoescaped: every text from a result is escaped, and the SVG drawings are built
escaped by ``shapes``). The page's Content-Security-Policy forbids loading anything but the
page's own data files: scripts need the page's nonce (``'self'`` alone does not cover ``file:``
in every browser), the inline style its hash; no network, fonts, frames or images.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from html import escape

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from markupsafe import escape as markup_escape

from harness.evidence.timeline import FaultRecord
from harness.judging.results import OUTCOMES, CaseResult, Check
from harness.reports import caseview
from harness.reports.drawing import timeline_svg
from harness.reports.refused import RefusedFile
from harness.reports.strip import StripCell, sweep_svg, verdict_classes
from harness.reports.summary import NO_FAULT, fault_family, is_failing, totals

FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc", "ndjson-http")
MAX_EXPANDED = 50  # failing cases shown in full on the page; the others open from the list
SCRIPTS = ("detail.js", "report.js")


@dataclass(frozen=True, slots=True)
class CaseView:
    """A failing case as the page shows it in full: every text ready, so the template only
    places it."""

    result: CaseResult
    index: int
    glance: str
    source: Markup  # escaped
    timeline: Markup
    facts: Markup  # table rows: expected, observed, ..., replay command, pcap link
    checks: Markup  # table rows: check, mark, evidence
    faults: Markup  # table rows: t (ms), connection, direction, fault, at byte, detail
    faults_more: int  # applications past MAX_FAULT_ROWS (results.json lists them all)


@dataclass(frozen=True, slots=True)
class ScenarioView:
    number: int  # in the page's case index
    name: str
    file: str
    line: int
    cases: int
    passed: int
    first: int  # index of its first case
    outcome: str  # of its only case, when it has one
    axis: str  # swept axes; "" without a sweep
    strip: Markup | None
    legend: tuple[tuple[str, str, int], ...]  # (colour class, verdict, cases)


@dataclass(slots=True)
class MatrixCell:
    passed: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class Matrix:
    framings: tuple[str, ...]
    families: tuple[str, ...]
    cells: Mapping[tuple[str, str], MatrixCell] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    created: str
    command: str
    elapsed_s: float
    totals: Mapping[str, int]
    outcomes: tuple[str, ...]
    matrix: Matrix
    failing: tuple[CaseView, ...]
    failing_total: int
    scenarios: tuple[ScenarioView, ...]
    #: the scenario files the run left out, each with every problem
    refused: tuple[RefusedFile, ...]
    csp: Markup  # quotes unescaped, for whoever reads the source: only tokens and hashes
    nonce: str
    style: Markup
    script: Markup


# The fact, check and fault tables are built here rather than in the template: a few rows per
# case, and the template's per-value work on them was most of the old page's cost.
def check_rows(checks: Sequence[Check]) -> Markup:
    rows = []
    for check in checks:
        cls, name, mark, evidence = caseview.check_cells(check)
        rows.append(
            f'<tr class="{cls}"><th>{escape(name)}</th><td>{mark}</td>'
            f"<td>{escape(evidence)}</td></tr>"
        )
    return Markup("".join(rows))


def fault_rows(faults: Sequence[FaultRecord]) -> Markup:
    rows = []
    for f in faults:
        cells = "".join(f"<td>{escape(cell)}</td>" for cell in caseview.fault_cells(f))
        rows.append(f"<tr>{cells}</tr>")
    return Markup("".join(rows))


def fact_rows(result: CaseResult, pcap: str | None) -> Markup:
    """The facts of a case, label and value per row; the observed verdict red when failing."""
    html = [
        f'<tr><th>{label}</th><td class="{cls}">{escape(value)}</td></tr>'
        for label, value, cls in caseview.facts(result)
    ]
    if pcap:
        html.append(f'<tr><th>pcap</th><td><a href="{escape(pcap)}">{escape(pcap)}</a></td></tr>')
    return Markup("".join(html))


def case_view(index: int, result: CaseResult, pcap: str | None, source: Markup) -> CaseView:
    faults, more = caseview.shown_faults(result)
    return CaseView(
        result=result,
        index=index,
        glance=caseview.glance(result),
        source=source,
        timeline=timeline_svg(result),
        facts=fact_rows(result, pcap),
        checks=check_rows(result.checks),
        faults=fault_rows(faults),
        faults_more=more,
    )


def matrix(results: Sequence[CaseResult]) -> Matrix:
    """Framing (rows) x fault family (columns): passed and failed cases per cell."""
    cells: dict[tuple[str, str], MatrixCell] = {}
    for r in results:
        cell = cells.setdefault((r.framing, fault_family(r)), MatrixCell())
        if is_failing(r):
            cell.failed += 1
        else:
            cell.passed += 1
    present = {framing for framing, _ in cells}
    framings = tuple(f for f in FRAMINGS if f in present) + tuple(sorted(present - set(FRAMINGS)))
    families = sorted({family for _, family in cells}, key=lambda f: (f != NO_FAULT, f))
    return Matrix(framings, tuple(families), cells)


def scenario_view(number: int, members: Sequence[CaseResult], first: int) -> ScenarioView:
    """One scenario folded to a line; a swept one with its strip, one column per case."""
    head = members[0]
    axis = ", ".join(name for name, _ in head.params)
    strip: Markup | None = None
    legend: tuple[tuple[str, str, int], ...] = ()
    if head.params:
        cells = [
            StripCell(caseview.params_text(r), caseview.verdict(r), r.outcome) for r in members
        ]
        classes = verdict_classes(cells)
        legend = tuple(
            (cls, verdict, sum(c.verdict == verdict for c in cells))
            for verdict, cls in classes.items()
        )
        strip = sweep_svg(cells, axis, number)
    return ScenarioView(
        number=number,
        name=head.scenario,
        file=head.file,
        line=head.line,
        cases=len(members),
        passed=sum(r.passed for r in members),
        first=first,
        outcome=head.outcome,
        axis=axis,
        strip=strip,
        legend=legend,
    )


def scenario_views(
    results: Sequence[CaseResult], groups: caseview.Scenarios
) -> tuple[ScenarioView, ...]:
    return tuple(
        scenario_view(number, [results[i] for i in members], members[0])
        for number, members in enumerate(groups.members)
    )


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("harness.reports", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def inline_text(*names: str) -> str:
    """The page's own CSS or script, from the templates folder, as it goes in the page."""
    environment = _environment()
    assert environment.loader is not None
    text = "\n".join(environment.loader.get_source(environment, n)[0] for n in names)
    if "</" in text or "<!--" in text:  # would end or confuse the inline element
        raise ValueError(f"{names}: not safe inline")
    return text


def csp_hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def content_security_policy(nonce: str, style: str) -> str:
    """Scripts: the inline one and the data files it inserts, all carrying the nonce. Styles:
    the inline sheet, by hash. Nothing else from anywhere."""
    if not nonce.replace("-", "").replace("_", "").isalnum():
        raise ValueError("nonce: letters, digits, - and _ only")
    return (
        f"default-src 'none'; script-src 'self' 'nonce-{nonce}'; style-src {csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _failing(
    results: Sequence[CaseResult],
    pcaps: Mapping[int, str],
    sources: Mapping[tuple[str, int], str],
) -> tuple[CaseView, ...]:
    views = []
    for i in [i for i, r in enumerate(results) if is_failing(r)][:MAX_EXPANDED]:
        r = results[i]
        source = markup_escape(sources.get((r.file, r.line), ""))
        views.append(case_view(i, r, pcaps.get(i), source))
    return tuple(views)


def render(
    results: Sequence[CaseResult],
    *,
    pcaps: Mapping[int, str],
    sources: Mapping[tuple[str, int], str],
    created: str,
    command: Sequence[str],
    elapsed_s: float,
    nonce: str,
    groups: caseview.Scenarios | None = None,
    refused: Sequence[RefusedFile] = (),
) -> str:
    """The page. ``nonce``: a fresh random token per report (``writer`` draws it); the data
    files in ``details/`` (``details.files``) must be written beside it; ``refused``: the
    scenario files the run left out, named at the top."""
    groups = groups or caseview.scenarios(results)
    counts = totals(results)
    style = inline_text("report.css")
    page = Page(
        title="tearline report",
        created=created,
        command=shlex.join(command),
        elapsed_s=elapsed_s,
        totals=counts,
        outcomes=OUTCOMES,
        matrix=matrix(results),
        failing=_failing(results, pcaps, sources),
        failing_total=counts["cases"] - counts["pass"],
        scenarios=scenario_views(results, groups),
        refused=tuple(refused),
        csp=Markup(content_security_policy(nonce, style)),
        nonce=nonce,
        style=Markup(style),
        script=Markup(inline_text(*SCRIPTS)),
    )
    return _environment().get_template("index.html.j2").render(page=page)
