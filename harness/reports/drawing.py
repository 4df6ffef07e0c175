"""The wire timeline of a case, the HTML report's main drawing (sweep strips: ``strip``).

Pure functions from results to ``shapes.Drawing`` (``shapes`` writes them as SVG markup or as
data for the page's script; colours come from the page's CSS classes). The timeline is drawn
against byte offsets, not time, because the question it answers is *where* the stream broke:
per connection, the leg to the consumer (each write a block, alternating shades so splits and
merges show), the clean stream's extent and message starts behind it, fault markers, the end
(FIN or RST) at the last byte written, what the consumer received, and the leg to the producer
on its own scale. Writes narrower than a pixel are merged, so a drawing stays a few hundred
shapes whatever the stream's length. A strip is run-length drawn (one rect per run of equal
verdicts or outcomes), so it stays small at thousands of cases; the page's script maps the
pointer to a column, and a column to its case.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from markupsafe import Markup

from harness.evidence.timeline import Segment, Timeline
from harness.judging.results import CaseResult
from harness.reports.shapes import (
    Drawing,
    Path,
    Rect,
    Shape,
    Text,
    group,
    line,
    path,
    rect,
    svg,
    text,
)

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


def _block(index: int, block: _Block, y: float, height: float) -> Rect:
    s = block.first
    shade = "hb" if s.kind == "heartbeat" else ("seg-a" if index % 2 == 0 else "seg-b")
    what = (
        f"write at byte {_n(s.offset)}, {_n(s.length)} B, t={s.t * 1000:.1f} ms"
        if block.count == 1
        else f"{block.count} writes from byte {_n(s.offset)}"
    )
    return rect(shade, block.x0, y, max(block.x1 - block.x0, 1.0), height, what)


def _lane_segments(timeline: Timeline, connection: int, direction: str) -> list[Segment]:
    key = (connection, direction)
    return [s for s in timeline.segments if (s.connection, s.direction) == key]


@lru_cache(maxsize=1024)  # labels repeat on every case
def _text(x: float, y: float, content: str, cls: str = "", anchor: str = "") -> Text:
    return text(cls, x, y, content, anchor)


def _end_marker(
    timeline: Timeline, connection: int, direction: str, scale: _Scale, y: float, height: float
) -> tuple[list[Shape], str]:
    """The leg's end drawn at its last byte, and the note beside the lane."""
    end = timeline.end_of(connection, direction)
    leg = timeline.legs.get((connection, direction))
    written = leg.written if leg else 0
    if end is None:
        return [], f"{_n(written)} B"
    label = END_HOW.get(end.how, end.how)
    cls = "end-rst" if "rst" in end.how else "end-fin"
    tip = f"{label} after {_n(written)} B, t={end.t * 1000:.1f} ms"
    mark = rect(cls, scale.x(written) - 1.5, y - 3, 3, height + 6, tip)
    return [mark], f"{_n(written)} B · {label}"


def _faults(
    timeline: Timeline, connection: int, direction: str, scale: _Scale, y: float, height: float
) -> list[Shape]:
    """A marker per fault application (one per pixel and kind: a slicing fault applies
    thousands of times); each kind is labelled at its first marker only."""
    parts: list[Shape] = []
    drawn: set[tuple[int, str]] = set()
    labelled: set[str] = set()
    for f in timeline.faults:
        if (f.connection, f.direction) != (connection, direction) or f.offset is None:
            continue
        x = scale.x(f.offset)
        if (int(x), f.name) in drawn:
            continue
        drawn.add((int(x), f.name))
        tip = f"{f.name} at byte {_n(f.offset)}, t={f.t * 1000:.1f} ms: {f.detail}"
        marker = path("", f"M{x - 4:.1f},{y - 10} h8 l-4,5 z")
        parts.append(group("fault", tip, line(x, y - 6, x, y + height + 3), marker))
        if f.name not in labelled:
            labelled.add(f.name)
            parts.append(_text(x + 5, y - 4, f.name, "fault-label"))
    return parts


@lru_cache(maxsize=256)
def _frame_ticks(frames: tuple[tuple[int, int], ...], scale: _Scale, y: float) -> Path | None:
    """Message starts on the clean stream, one tick per pixel at most. Cached: the cases of a
    sweep share their clean stream."""
    ticks, last = [], -1
    for start, _ in frames:
        x = scale.x(start)
        if int(x) > last:
            ticks.append(f"M{x:.1f},{y}v4")
            last = int(x)
    return path("frame", "".join(ticks)) if ticks else None


@dataclass(frozen=True, slots=True)
class _Lane:
    direction: str
    label: str
    height: int
    scale: _Scale


def _clean_stream(result: CaseResult, lane: _Lane, top: float) -> list[Shape]:
    """The clean stream's extent behind the leg to the consumer, ticks at message starts."""
    if lane.direction != "downstream" or not result.wire_bytes:
        return []
    right = lane.scale.x(result.wire_bytes)
    # the whole stream only when its producer reached its end; else what the proxy had read
    whole = "the producer's whole stream" if result.wire_complete else "read from the producer"
    clean = f"{whole}: {_n(result.wire_bytes)} B, {_n(len(result.frames))} messages"
    ticks = _frame_ticks(result.frames, lane.scale, top + lane.height + 2)
    extent = rect("expected", LANE_X, top - 2, right - LANE_X, lane.height + 4, clean)
    return [extent] if ticks is None else [extent, ticks]


def _lane(result: CaseResult, connection: int, lane: _Lane, top: float) -> list[Shape]:
    timeline = result.timeline
    parts: list[Shape] = [_text(4, top + lane.height - 4, lane.label, "lane-label")]
    parts += _clean_stream(result, lane, top)
    blocks = _blocks(_lane_segments(timeline, connection, lane.direction), lane.scale)
    parts += [_block(i, b, top, lane.height) for i, b in enumerate(blocks)]
    marks, note = _end_marker(timeline, connection, lane.direction, lane.scale, top, lane.height)
    parts += marks + _faults(timeline, connection, lane.direction, lane.scale, top, lane.height)
    parts.append(_text(NOTE_X, top + lane.height - 4, note, "note"))
    return parts


def _received(result: CaseResult, connection: int, scale: _Scale, top: float) -> list[Shape]:
    """What the consumer's connection received, and in how many reads."""
    report = result.report
    if report is None or connection > len(report.connections):
        return [_text(4, top + 6, "consumer: no report", "lane-label")]
    summary = report.connections[connection - 1]
    width = scale.x(summary.bytes_received) - LANE_X
    note = f"{_n(summary.bytes_received)} B in {_n(summary.reads)} reads · {summary.end}"
    return [
        _text(4, top + 6, "consumer received", "lane-label"),
        rect("recv", LANE_X, top, width, 6, note),
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


def timeline_drawing(result: CaseResult) -> Drawing:
    """The wire timeline of one case."""
    timeline = result.timeline
    connections = sorted({c for c, _ in timeline.legs})
    if not connections:
        nothing = "no connection reached the proxy"
        return Drawing("timeline", WIDTH, 24, nothing, (_text(4, 16, nothing, "note"),))
    down, up = _scales(result)
    parts: list[Shape] = []
    y = 4.0
    for connection in connections:
        parts.append(_text(4, y + 12, f"connection {connection}", "conn-label"))
        top = y + 20
        parts += _lane(result, connection, _Lane("downstream", "to consumer ↓", 16, down), top)
        parts += _received(result, connection, down, top + 24)
        parts += _lane(result, connection, _Lane("upstream", "to producer ↑", 10, up), top + 38)
        y = top + 38 + 10 + 12
    return Drawing("timeline", WIDTH, int(y), f"wire timeline of {result.case_id}", parts)


def timeline_svg(result: CaseResult) -> Markup:
    """The wire timeline of one case, as SVG markup."""
    return svg(timeline_drawing(result))
