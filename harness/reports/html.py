"""``index.html``: one self-contained page (inline CSS, JS and SVG; nothing fetched) that shows
a run at a glance and every case in detail.

This module turns results into plain view records; ``templates/index.html.j2`` lays them out
(Jinja2, autoescaped: every text from a result is escaped, and the SVG drawings are built
escaped by ``drawing``). The page's own Content-Security-Policy forbids loading anything, so a
report that works once works offline, forever.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from html import escape

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from markupsafe import escape as markup_escape

from harness.judging.results import OUTCOMES, CaseResult, Check, replay_command
from harness.judging.timeline import FaultRecord
from harness.reports.drawing import StripCell, sweep_svg, timeline_svg, verdict_classes
from harness.reports.summary import NO_FAULT, fault_family, is_failing, observed_label, totals

FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")
MAX_FAULT_ROWS = 50
END_WORDS = {"rst": "RST", "peer-rst": "RST from the producer", "fin": "FIN", "eof": "FIN"}
CHECK_MARKS = {True: ("ok", "\N{CHECK MARK}"), False: ("ko", "\N{BALLOT X}"), None: ("na", "-")}


@dataclass(frozen=True, slots=True)
class CaseView:
    """A case as the page shows it: every text ready, so the template only places it (on a
    1,000-case run the template's per-value work is most of the report's cost)."""

    result: CaseResult
    anchor: str
    name: str  # lowercase case id, for the search box
    family: str
    glance: str
    source: Markup  # escaped
    timeline: Markup
    facts: Markup  # table rows: expected, observed, ..., replay command, pcap link
    checks: Markup  # table rows: check, mark, evidence
    faults: Markup  # table rows: t (ms), connection, direction, fault, at byte, detail
    faults_more: int  # applications past MAX_FAULT_ROWS (results.json lists them all)
    failing: bool


@dataclass(frozen=True, slots=True)
class SweepView:
    title: str
    axis: str
    strip: Markup
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
    sweeps: tuple[SweepView, ...]
    cases: tuple[CaseView, ...]


def params_text(result: CaseResult) -> str:
    return ",".join(f"{name}={value}" for name, value in result.params)


def glance(result: CaseResult) -> str:
    """One line on where the stream to the consumer ended, per connection."""
    timeline = result.timeline
    parts = []
    for (connection, direction), leg in sorted(timeline.legs.items()):
        if direction != "downstream":
            continue
        end = timeline.end_of(connection, direction)
        how = END_WORDS.get(end.how, end.how) if end else "still open"
        of = f" of {result.wire_bytes:,}" if result.wire_bytes else ""
        parts.append(f"connection {connection}: {leg.written:,}{of} B to the consumer, then {how}")
    return "; ".join(parts) or "no bytes reached the consumer"


# The fact, check and fault tables are built here rather than in the template: a few rows per
# case, but on a 1,000-case page the template's per-value work on them was half the page's cost.
def check_rows(checks: Sequence[Check]) -> Markup:
    rows = []
    for c in checks:
        cls, mark = CHECK_MARKS[c.ok]
        rows.append(
            f'<tr class="{cls}"><th>{escape(c.name)}</th><td>{mark}</td>'
            f"<td>{escape(c.evidence)}</td></tr>"
        )
    return Markup("".join(rows))


def fault_rows(faults: Sequence[FaultRecord]) -> Markup:
    rows = []
    for f in faults:
        at = "-" if f.offset is None else f"{f.offset:,}"
        rows.append(
            f"<tr><td>{f.t * 1000:.1f}</td><td>{f.connection}</td><td>{escape(f.direction)}</td>"
            f"<td>{escape(f.name)}</td><td>{at}</td><td>{escape(f.detail)}</td></tr>"
        )
    return Markup("".join(rows))


def fact_rows(result: CaseResult, pcap: str | None) -> Markup:
    """The facts of a case, label and value per row; the observed verdict red when failing."""
    report = result.report
    observed = "ko" if is_failing(result) else ""
    rows = [
        ("expected", result.expected or "-", ""),
        ("observed", observed_label(result), observed),
        (
            "accepted",
            f"{len(report.accepted)} messages in {report.reads} reads" if report else "",
            "",
        ),
        ("link", f"{result.payload} over {result.framing}; faults: {fault_family(result)}", ""),
        ("sweep", params_text(result), ""),
        ("seed", str(result.seed), "code"),
        ("replay", replay_command(result), "code"),
        ("time", f"{result.duration_s * 1000:.0f} ms", ""),
    ]
    html = [
        f'<tr><th>{label}</th><td class="{cls}">{escape(value)}</td></tr>'
        for label, value, cls in rows
        if value
    ]
    if pcap:
        html.append(f'<tr><th>pcap</th><td><a href="{escape(pcap)}">{escape(pcap)}</a></td></tr>')
    return Markup("".join(html))


def case_view(index: int, result: CaseResult, pcap: str | None, source: Markup) -> CaseView:
    return CaseView(
        result=result,
        anchor=f"case-{index}",
        name=result.case_id.lower(),
        family=fault_family(result),
        glance=glance(result),
        source=source,
        timeline=timeline_svg(result),
        facts=fact_rows(result, pcap),
        checks=check_rows(result.checks),
        faults=fault_rows(result.timeline.faults[:MAX_FAULT_ROWS]),
        faults_more=max(len(result.timeline.faults) - MAX_FAULT_ROWS, 0),
        failing=is_failing(result),
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


def sweeps(views: Sequence[CaseView]) -> tuple[SweepView, ...]:
    """One strip per swept scenario, its cases in sweep order."""
    groups: dict[tuple[str, str], list[CaseView]] = {}
    for view in views:
        if view.result.params:
            key = (view.result.file, view.result.scenario)
            groups.setdefault(key, []).append(view)
    strips = []
    for (file, scenario), members in groups.items():
        cells = [
            StripCell(
                v.anchor,
                params_text(v.result),
                v.result.report.verdict if v.result.report else "-",
                v.result.outcome,
            )
            for v in members
        ]
        axis = ", ".join(name for name, _ in members[0].result.params)
        classes = verdict_classes(cells)
        legend = tuple(
            (cls, verdict, sum(c.verdict == verdict for c in cells))
            for verdict, cls in classes.items()
        )
        title = f"{scenario} ({file})" if file else scenario
        strips.append(SweepView(title, axis, sweep_svg(cells, axis), legend))
    return tuple(strips)


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("harness.reports", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(
    results: Sequence[CaseResult],
    *,
    pcaps: Mapping[int, str],
    sources: Mapping[tuple[str, int], str],
    created: str,
    command: Sequence[str],
    elapsed_s: float,
) -> str:
    """The whole page."""
    escaped = {key: markup_escape(text) for key, text in sources.items()}
    views = tuple(
        case_view(i, r, pcaps.get(i), escaped.get((r.file, r.line), Markup()))
        for i, r in enumerate(results)
    )
    page = Page(
        title="tearline report",
        created=created,
        command=shlex.join(command),
        elapsed_s=elapsed_s,
        totals=totals(results),
        outcomes=OUTCOMES,
        matrix=matrix(results),
        sweeps=sweeps(views),
        cases=views,
    )
    return _environment().get_template("index.html.j2").render(page=page)
