"""A sweep's verdict strip: one column per case in sweep order, the verdict the consumer
reached on top, the outcome below.

Run-length drawn (one rect per run of equal verdicts or outcomes), so a strip stays a few
shapes at thousands of cases; the page's script maps the pointer to a column and the column to
its case (the ``<svg>`` carries the scenario's number and the column width).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from harness.reports.shapes import Drawing, Shape, path, rect, svg, text

STRIP_MAX_W = 18
STRIP_MIN_W = 3
STRIP_SEPARATED_W = 6  # columns at least this wide get a gap between them
STRIP_MIN_LABELS_W = 320
PALETTE = 8  # verdict colours v0..v7 in the page's CSS, reused in order beyond that


@dataclass(frozen=True, slots=True)
class StripCell:
    params: str  # "offset=17"
    verdict: str  # observed verdict, or "-" without a report
    outcome: str


def verdict_classes(cells: Sequence[StripCell]) -> dict[str, str]:
    """Verdict -> colour class, in order of first appearance."""
    classes: dict[str, str] = {}
    for cell in cells:
        if cell.verdict not in classes:
            classes[cell.verdict] = (
                "v-none" if cell.verdict == "-" else f"v{len(classes) % PALETTE}"
            )
    return classes


def strip_width(count: int) -> int:
    """The width of one column of a strip of ``count`` cases."""
    return max(STRIP_MIN_W, min(STRIP_MAX_W, 700 // max(count, 1)))


def _runs(classes: Sequence[str]) -> list[tuple[int, int, str]]:
    """(first column, columns, class) of each run of equal classes."""
    runs: list[tuple[int, int, str]] = []
    for i, cls in enumerate(classes):
        if runs and runs[-1][2] == cls:
            first, count, _ = runs[-1]
            runs[-1] = (first, count + 1, cls)
        else:
            runs.append((i, 1, cls))
    return runs


def _range_labels(cells: Sequence[StripCell], strip_w: int) -> list[Shape]:
    """The range's ends below the strip: one at each end, or both together under a short one."""
    first, last = cells[0].params, cells[-1].params
    if len(cells) < 2:
        return [text("note", 0, 36, first)]
    if strip_w < STRIP_MIN_LABELS_W:
        return [text("note", 0, 36, f"{first} … {last}")]
    return [text("note", 0, 36, first), text("note", strip_w, 36, last, anchor="end")]


def sweep_drawing(cells: Sequence[StripCell], axis: str, scenario: int) -> Drawing:
    """A strip: one column per case in sweep order, the verdict on top, the outcome below.
    ``scenario`` (the scenario's number in the page's case index) lets the page's script find
    the case under the pointer."""
    w = strip_width(len(cells))
    classes = verdict_classes(cells)
    parts: list[Shape] = []
    for first, count, cls in _runs([classes[c.verdict] for c in cells]):
        parts.append(rect(cls, first * w, 0, count * w, 16))
    for first, count, outcome in _runs([c.outcome for c in cells]):
        parts.append(rect(f"o-{outcome}", first * w, 18, count * w, 5))
    strip_w = len(cells) * w
    if w >= STRIP_SEPARATED_W and len(cells) > 1:
        parts.append(path("sep", "".join(f"M{i * w - 0.25},0v23" for i in range(1, len(cells)))))
    parts += _range_labels(cells, strip_w) if cells else []
    attrs = (("data-scenario", str(scenario)), ("data-column", str(w)))
    label = f"sweep over {axis}: verdict per case"
    return Drawing("strip", max(strip_w, STRIP_MIN_LABELS_W), 40, label, parts, attrs)


def sweep_svg(cells: Sequence[StripCell], axis: str, scenario: int) -> Markup:
    return svg(sweep_drawing(cells, axis, scenario))
