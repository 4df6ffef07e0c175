"""The SVG drawings: well-formed, escaped, bounded in size, marks where they belong."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import pytest

from harness.evidence.timeline import Timeline
from harness.judging.results import CaseResult
from harness.reports import shapes
from harness.reports.drawing import LANE_W, LANE_X, timeline_drawing, timeline_svg
from harness.reports.strip import STRIP_MAX_W, StripCell, strip_width, sweep_svg, verdict_classes
from tests.reports.conftest import by_name

SVG = "{http://www.w3.org/2000/svg}"


def parse(markup: str) -> ET.Element:
    return ET.fromstring(markup)


def rects(svg: ET.Element, cls: str) -> list[ET.Element]:
    return [r for r in svg.iter(f"{SVG}rect") if r.get("class") == cls]


def test_every_case_draws_well_formed_svg(results: Sequence[CaseResult]) -> None:
    for result in results:
        svg = parse(timeline_svg(result))
        assert svg.tag == f"{SVG}svg"
        assert svg.get("aria-label") in (
            f"wire timeline of {result.case_id}",
            "no connection reached the proxy",
        )


def test_a_cut_shows_the_fault_and_the_rst(results: Sequence[CaseResult]) -> None:
    result = by_name(results, "rst-in-chunk")
    svg = parse(timeline_svg(result))
    offset, total = result.timeline.faults[0].offset, result.wire_bytes
    assert offset is not None and total is not None
    line = next(svg.iter(f"{SVG}line"))
    assert float(line.get("x1", "")) == pytest.approx(LANE_X + LANE_W * offset / total, abs=0.06)
    assert len(rects(svg, "end-rst")) == 1 and rects(svg, "end-fin") == []
    assert len(rects(svg, "expected")) == 1
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    written = result.timeline.legs[(1, "downstream")].written
    assert f"{written:,} B · RST" in texts
    assert "kill" in texts


def test_a_reconnect_draws_two_connections(results: Sequence[CaseResult]) -> None:
    svg = parse(timeline_svg(by_name(results, "reconnect")))
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert texts.count("connection 1") == texts.count("connection 2") == 1
    assert len(rects(svg, "end-fin")) == 3  # FIN cut, then FIN after the full stream; EOF up


def test_no_connection(results: Sequence[CaseResult]) -> None:
    svg = parse(timeline_svg(by_name(results, "missing-frame")))
    assert [t.text for t in svg.iter(f"{SVG}text")] == ["no connection reached the proxy"]


def test_thousands_of_writes_stay_a_few_hundred_rects(results: Sequence[CaseResult]) -> None:
    timeline = Timeline()
    for i in range(20_000):
        timeline.wrote(i / 1e5, 1, "downstream", b"x")
    result = dataclasses.replace(results[0], timeline=timeline, wire_bytes=20_000, frames=())
    svg = parse(timeline_svg(result))
    writes = rects(svg, "seg-a") + rects(svg, "seg-b")
    assert LANE_W - 2 <= len(writes) <= LANE_W + 1
    titles = {r.findtext(f"{SVG}title") for r in writes}
    assert "34 writes from byte 0" in titles or "35 writes from byte 0" in titles


def test_text_is_escaped(results: Sequence[CaseResult]) -> None:
    hostile = dataclasses.replace(results[0], case_id='x"><script>alert(1)</script>')
    markup = str(timeline_svg(hostile))
    assert "<script>" not in markup
    assert parse(markup).get("aria-label") == 'wire timeline of x"><script>alert(1)</script>'


def test_sweep_strip_draws_runs_and_tells_the_page_its_scenario() -> None:
    cells = [
        StripCell("offset=0", "A", "pass"),
        StripCell("offset=5", "A", "pass"),
        StripCell("offset=10", "B", "fail"),
        StripCell("offset=15", "-", "no_verdict"),
    ]
    assert verdict_classes(cells) == {"A": "v0", "B": "v1", "-": "v-none"}
    svg = parse(sweep_svg(cells, "offset", 7))
    assert (svg.get("data-scenario"), svg.get("data-column")) == ("7", str(STRIP_MAX_W))
    runs = [(r.get("class"), r.get("x"), r.get("width")) for r in svg.iter(f"{SVG}rect")]
    w = float(STRIP_MAX_W)
    assert [(c, float(x or 0), float(width or 0)) for c, x, width in runs] == [
        ("v0", 0, 2 * w),
        ("v1", 2 * w, w),
        ("v-none", 3 * w, w),
        ("o-pass", 0, 2 * w),
        ("o-fail", 2 * w, w),
        ("o-no_verdict", 3 * w, w),
    ]
    assert [t.text for t in svg.iter(f"{SVG}text")] == ["offset=0 … offset=15"]
    many = [StripCell(f"offset={i}", "A", "pass") for i in range(100)]
    wide = parse(sweep_svg(many, "offset", 0))
    assert [t.text for t in wide.iter(f"{SVG}text")] == ["offset=0", "offset=99"]


def test_a_strip_of_thousands_of_cases_stays_a_few_shapes() -> None:
    cells = [StripCell(f"offset={i}", "A" if i < 3000 else "B", "pass") for i in range(5000)]
    svg = parse(sweep_svg(cells, "offset", 0))
    assert len(list(svg.iter(f"{SVG}rect"))) == 3
    assert svg.get("data-column") == str(strip_width(5000)) == "3"


def test_data_and_markup_are_the_same_picture(results: Sequence[CaseResult]) -> None:
    """What detail.js builds from the data is what the page's own SVG shows."""
    kinds = {"r": "rect", "t": "text", "p": "path", "l": "line", "g": "g"}

    def tags(items: list[Any]) -> list[str]:
        out = []
        for item in items:
            out.append(kinds[item[0]])
            if item[0] == "g":
                out += tags(item[3])
        return out

    for result in results:
        drawing = timeline_drawing(result)
        svg = parse(shapes.svg(drawing))
        drawn = [e.tag.removeprefix(SVG) for e in svg.iter() if e is not svg]
        assert [t for t in drawn if t != "title"] == tags(shapes.data(drawing)["items"])
        titles = [e.text for e in svg.iter(f"{SVG}title")]
        assert len(titles) == sum(1 for t in drawn if t == "title")


def test_a_fault_applied_thousands_of_times_stays_readable(results: Sequence[CaseResult]) -> None:
    timeline = Timeline()
    for i in range(5_000):
        timeline.wrote(i / 1e5, 1, "downstream", b"x")
        timeline.fault(i / 1e5, 1, "downstream", "slice", i, "1 B")
    result = dataclasses.replace(results[0], timeline=timeline, wire_bytes=5_000, frames=())
    svg = parse(timeline_svg(result))
    markers = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "fault"]
    assert LANE_W - 2 <= len(markers) <= LANE_W + 1
    assert [t.text for t in svg.iter(f"{SVG}text")].count("slice") == 1
