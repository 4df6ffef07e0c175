"""SVG drawings of the HTML report: a case's wire timeline, and a sweep's verdict strip.

Pure functions from results to markup (every text escaped here; colours come from the page's
CSS classes). The timeline is drawn against byte offsets, not time, because the question it
answers is *where* the stream broke: per connection, the leg to the consumer (each write a
block, alternating shades so splits and merges show), the clean stream's extent and message
starts behind it, fault markers, the end (FIN or RST) at the last byte written, what the consumer
received, and the leg to the producer on its own scale. Writes narrower than a pixel are merged,
so a drawing stays a few hundred elements whatever the stream's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape

from markupsafe import Markup

from harness.judging.results import CaseResult
from harness.judging.timeline import Segment, Timeline

WIDTH = 940
LANE_X = 128
LANE_W = 580
NOTE_X = LANE_X + LANE_W + 10
END_HOW = {"rst": "RST", "peer-rst": "RST (peer)", "fin": "FIN", "eof": "FIN", "half": "half-close"}


def _n(value: int) -> str:
    return f"{value:,}"


@dataclass(frozen=True, slots=True)
class _Scale:
    total: int

    def x(self, offset: int) -> float:
        return LANE_X + LANE_W * min(offset, self.total) / max(self.total, 1)


@dataclass(slots=True)
class _Block:
    x0: float
    x1: float
    first: Segment
    count: int


def _blocks(segments: Iterable[Segment], scale: _Scale) -> list[_Block]:
    """Writes as blocks; a write starting in the same pixel as the open block joins it (whatever
    its kind: a pixel cannot show both, and the count must stay bounded)."""
    blocks: list[_Block] = []
    for s in segments:
        x0, x1 = scale.x(s.offset), scale.x(s.offset + s.length)
        if blocks and int(x0) <= int(blocks[-1].x0):
            blocks[-1].x1, blocks[-1].count = max(x1, blocks[-1].x1), blocks[-1].count + 1
        else:
            blocks.append(_Block(x0, x1, s, 1))
    return blocks


def _block_svg(index: int, block: _Block, y: float, height: float) -> str:
    s = block.first
    shade = "hb" if s.kind == "heartbeat" else ("seg-a" if index % 2 == 0 else "seg-b")
    what = (
        f"write at byte {_n(s.offset)}, {_n(s.length)} B, t={s.t * 1000:.1f} ms"
        if block.count == 1
        else f"{block.count} writes from byte {_n(s.offset)}"
    )
    width = max(block.x1 - block.x0, 1.0)
    return (
        f'<rect class="{shade}" x="{block.x0:.1f}" y="{y}" width="{width:.1f}" '
        f'height="{height}"><title>{escape(what)}</title></rect>'
    )


def _lane_segments(timeline: Timeline, connection: int, direction: str) -> list[Segment]:
    key = (connection, direction)
    return [s for s in timeline.segments if (s.connection, s.direction) == key]


@lru_cache(maxsize=1024)  # labels repeat on every case
def _text(x: float, y: float, text: str, cls: str = "", anchor: str = "start") -> str:
    extra = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def _end_marker(
    timeline: Timeline, connection: int, direction: str, scale: _Scale, y: float, height: float
) -> tuple[list[str], str]:
    """The leg's end drawn at its last byte, and the note beside the lane."""
    end = timeline.end_of(connection, direction)
    leg = timeline.legs.get((connection, direction))
    written = leg.written if leg else 0
    if end is None:
        return [], f"{_n(written)} B"
    label = END_HOW.get(end.how, end.how)
    x = scale.x(written)
    cls = "end-rst" if "rst" in end.how else "end-fin"
    mark = (
        f'<rect class="{cls}" x="{x - 1.5:.1f}" y="{y - 3}" width="3" height="{height + 6}">'
        f"<title>{escape(f'{label} after {_n(written)} B, t={end.t * 1000:.1f} ms')}</title></rect>"
    )
    return [mark], f"{_n(written)} B · {label}"


def _faults(
    timeline: Timeline, connection: int, direction: str, scale: _Scale, y: float, height: float
) -> list[str]:
    """A marker per fault application (one per pixel and kind: a slicing fault applies
    thousands of times); each kind is labelled at its first marker only."""
    parts: list[str] = []
    drawn: set[tuple[int, str]] = set()
    for f in timeline.faults:
        if (f.connection, f.direction) != (connection, direction) or f.offset is None:
            continue
        x = scale.x(f.offset)
        if (int(x), f.name) in drawn:
            continue
        labelled = any(name == f.name for _, name in drawn)
        drawn.add((int(x), f.name))
        tip = escape(f"{f.name} at byte {_n(f.offset)}, t={f.t * 1000:.1f} ms: {f.detail}")
        parts.append(
            f'<g class="fault"><line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 6}" y2="{y + height + 3}"/>'
            f'<path d="M{x - 4:.1f},{y - 10} h8 l-4,5 z"/><title>{tip}</title></g>'
        )
        if not labelled:
            parts.append(_text(x + 5, y - 4, f.name, "fault-label"))
    return parts


@lru_cache(maxsize=256)
def _frame_ticks(frames: tuple[tuple[int, int], ...], scale: _Scale, y: float) -> str:
    """Message starts on the clean stream, one tick per pixel at most. Cached: the cases of a
    sweep share their clean stream."""
    ticks, last = [], -1
    for start, _ in frames:
        x = scale.x(start)
        if int(x) > last:
            ticks.append(f"M{x:.1f},{y}v4")
            last = int(x)
    return f'<path class="frame" d="{"".join(ticks)}"/>' if ticks else ""


@dataclass(frozen=True, slots=True)
class _Lane:
    direction: str
    label: str
    height: int
    scale: _Scale


def _lane(result: CaseResult, connection: int, lane: _Lane, top: float) -> list[str]:
    timeline = result.timeline
    parts = [_text(4, top + lane.height - 4, lane.label, "lane-label")]
    if lane.direction == "downstream" and result.wire_bytes:
        right = lane.scale.x(result.wire_bytes)
        clean = f"clean stream: {_n(result.wire_bytes)} B, {_n(len(result.frames))} messages"
        parts.append(
            f'<rect class="expected" x="{LANE_X}" y="{top - 2}" width="{right - LANE_X:.1f}" '
            f'height="{lane.height + 4}"><title>{escape(clean)}</title></rect>'
        )
        parts.append(_frame_ticks(result.frames, lane.scale, top + lane.height + 2))
    blocks = _blocks(_lane_segments(timeline, connection, lane.direction), lane.scale)
    parts += [_block_svg(i, b, top, lane.height) for i, b in enumerate(blocks)]
    marks, note = _end_marker(timeline, connection, lane.direction, lane.scale, top, lane.height)
    parts += marks + _faults(timeline, connection, lane.direction, lane.scale, top, lane.height)
    parts.append(_text(NOTE_X, top + lane.height - 4, note, "note"))
    return parts


def _received(result: CaseResult, connection: int, scale: _Scale, top: float) -> list[str]:
    """What the consumer's connection received, and in how many reads."""
    report = result.report
    if report is None or connection > len(report.connections):
        return [_text(4, top + 6, "consumer: no report", "lane-label")]
    summary = report.connections[connection - 1]
    width = scale.x(summary.bytes_received) - LANE_X
    note = f"{_n(summary.bytes_received)} B in {_n(summary.reads)} reads · {summary.end}"
    return [
        _text(4, top + 6, "consumer received", "lane-label"),
        f'<rect class="recv" x="{LANE_X}" y="{top}" width="{width:.1f}" height="6">'
        f"<title>{escape(note)}</title></rect>",
        _text(NOTE_X, top + 6, note, "note"),
    ]


def _scales(result: CaseResult) -> tuple[_Scale, _Scale]:
    """One byte scale for every leg to the consumer (so connections compare), one for the
    legs to the producer (requests are tiny next to responses)."""
    timeline = result.timeline
    down = [leg.written for (_, d), leg in timeline.legs.items() if d == "downstream"]
    offsets = [f.offset or 0 for f in timeline.faults if f.direction == "downstream"]
    up = [leg.written for (_, d), leg in timeline.legs.items() if d == "upstream"]
    total_down = max([result.wire_bytes or 0, *down, *(o + 1 for o in offsets)], default=1)
    return _Scale(max(total_down, 1)), _Scale(max(up, default=1) or 1)


def timeline_svg(result: CaseResult) -> Markup:
    """The wire timeline of one case."""
    timeline = result.timeline
    connections = sorted({c for c, _ in timeline.legs})
    if not connections:
        body, height = _text(4, 16, "no connection reached the proxy", "note"), 24
        return Markup(_svg(body, height, "no connection reached the proxy"))
    down, up = _scales(result)
    parts: list[str] = []
    y = 4.0
    for connection in connections:
        parts.append(_text(4, y + 12, f"connection {connection}", "conn-label"))
        top = y + 20
        parts += _lane(result, connection, _Lane("downstream", "to consumer ↓", 16, down), top)
        parts += _received(result, connection, down, top + 24)
        parts += _lane(result, connection, _Lane("upstream", "to producer ↑", 10, up), top + 38)
        y = top + 38 + 10 + 12
    label = f"wire timeline of {result.case_id}"
    return Markup(_svg("".join(parts), int(y), label))


def _svg(body: str, height: int, label: str, width: int = WIDTH, cls: str = "timeline") -> str:
    return (
        f'<svg class="{cls}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f"{body}</svg>"
    )


# -- sweep strip ---------------------------------------------------------------------------

STRIP_MAX_W = 18
STRIP_MIN_W = 3
STRIP_MIN_LABELS_W = 320
PALETTE = 8  # verdict colours v0..v7 in the page's CSS, reused in order beyond that


@dataclass(frozen=True, slots=True)
class StripCell:
    anchor: str  # the case's element id
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


def sweep_svg(cells: Sequence[StripCell], axis: str) -> Markup:
    """A strip: one column per case in sweep order, the verdict on top, the outcome below;
    each column links to its case."""
    classes = verdict_classes(cells)
    w = max(STRIP_MIN_W, min(STRIP_MAX_W, 700 // max(len(cells), 1)))
    parts, size = [], f'width="{w - 0.5}"'
    for i, cell in enumerate(cells):
        tip = escape(f"{cell.params} → {cell.verdict} ({cell.outcome})")
        parts.append(
            f'<a href="#{escape(cell.anchor)}"><g><title>{tip}</title>'
            f'<rect class="{classes[cell.verdict]}" x="{i * w}" y="0" {size} height="16"/>'
            f'<rect class="o-{escape(cell.outcome)}" x="{i * w}" y="18" {size} height="5"/>'
            f"</g></a>"
        )
    # The range's ends below the strip: one at each end, or both together under a short strip.
    strip_w = len(cells) * w
    first, last = cells[0].params if cells else "", cells[-1].params if cells else ""
    if len(cells) < 2:
        parts.append(_text(0, 36, first, "note"))
    elif strip_w < STRIP_MIN_LABELS_W:
        parts.append(_text(0, 36, f"{first} … {last}", "note"))
    else:
        parts += [_text(0, 36, first, "note"), _text(strip_w, 36, last, "note", anchor="end")]
    width = max(strip_w, STRIP_MIN_LABELS_W)
    label = f"sweep over {axis}: verdict per case"
    return Markup(_svg("".join(parts), 40, label, width=int(width), cls="strip"))
