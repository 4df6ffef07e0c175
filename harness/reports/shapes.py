"""Drawing primitives: what ``drawing`` lays out, in two spellings of the same picture.

Each shape is a tuple tagged with its kind, so it already is the compact JSON the detail files
carry (``templates/detail.js`` builds the same elements from it with DOM calls, text through
``textContent``, never parsed as markup); ``svg`` writes it as SVG markup, every text escaped,
for the cases the page shows in full. The layout is computed once, here in Python::

    ["r", class, x, y, width, height, title]   a rect ("" title: none)
    ["t", class, x, y, text, anchor]           a text ("" anchor: start)
    ["p", class, d]                            a path
    ["l", x1, y1, x2, y2]                      a line
    ["g", class, title, [shapes...]]           a group

Coordinates are rounded to a tenth of a pixel when a shape is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Literal, NamedTuple

from markupsafe import Markup

SVG_NS = "http://www.w3.org/2000/svg"


class Rect(NamedTuple):
    kind: Literal["r"]
    cls: str
    x: float
    y: float
    width: float
    height: float
    title: str


class Text(NamedTuple):
    kind: Literal["t"]
    cls: str
    x: float
    y: float
    text: str
    anchor: str  # "" (start) | "middle" | "end"


class Path(NamedTuple):
    kind: Literal["p"]
    cls: str
    d: str


class Line(NamedTuple):
    kind: Literal["l"]
    x1: float
    y1: float
    x2: float
    y2: float


class Group(NamedTuple):
    kind: Literal["g"]
    cls: str
    title: str
    items: tuple[Shape, ...]


Shape = Rect | Text | Path | Line | Group


def rect(cls: str, x: float, y: float, width: float, height: float, title: str = "") -> Rect:
    return Rect("r", cls, round(x, 1), round(y, 1), round(width, 1), round(height, 1), title)


def text(cls: str, x: float, y: float, content: str, anchor: str = "") -> Text:
    return Text("t", cls, round(x, 1), round(y, 1), content, anchor)


def path(cls: str, d: str) -> Path:
    return Path("p", cls, d)


def line(x1: float, y1: float, x2: float, y2: float) -> Line:
    return Line("l", round(x1, 1), round(y1, 1), round(x2, 1), round(y2, 1))


def group(cls: str, title: str, *items: Shape) -> Group:
    return Group("g", cls, title, items)


@dataclass(frozen=True, slots=True)
class Drawing:
    cls: str  # "timeline" | "strip"
    width: int
    height: int
    label: str  # the accessible name
    items: Sequence[Shape]
    attrs: tuple[tuple[str, str], ...] = ()  # extra attributes of the <svg> (data-*)


def _title(title: str) -> str:
    return f"<title>{escape(title)}</title>" if title else ""


def _rect(s: Rect) -> str:
    attrs = f'class="{s.cls}" x="{s.x}" y="{s.y}" width="{s.width}" height="{s.height}"'
    return f"<rect {attrs}>{_title(s.title)}</rect>" if s.title else f"<rect {attrs}/>"


def _text(s: Text) -> str:
    anchor = f' text-anchor="{s.anchor}"' if s.anchor else ""
    cls = f' class="{s.cls}"' if s.cls else ""
    return f'<text x="{s.x}" y="{s.y}"{anchor}{cls}>{escape(s.text)}</text>'


def _path(s: Path) -> str:
    cls = f'class="{s.cls}" ' if s.cls else ""
    return f'<path {cls}d="{escape(s.d)}"/>'


def _line(s: Line) -> str:
    return f'<line x1="{s.x1}" y1="{s.y1}" x2="{s.x2}" y2="{s.y2}"/>'


def _group(s: Group) -> str:
    return f'<g class="{s.cls}">{"".join(markup(i) for i in s.items)}{_title(s.title)}</g>'


_MARKUP: dict[str, Callable[[Any], str]] = {
    "r": _rect,
    "t": _text,
    "p": _path,
    "l": _line,
    "g": _group,
}


def markup(shape: Shape) -> str:
    """One shape as SVG markup."""
    return _MARKUP[shape.kind](shape)


def svg(drawing: Drawing) -> Markup:
    """The drawing as one ``<svg>`` element."""
    extra = "".join(f' {name}="{escape(value)}"' for name, value in drawing.attrs)
    w, h = drawing.width, drawing.height
    return Markup(
        f'<svg class="{drawing.cls}" xmlns="{SVG_NS}" viewBox="0 0 {w} {h}" width="{w}" '
        f'height="{h}" role="img" aria-label="{escape(drawing.label)}"{extra}>'
        f"{''.join(markup(item) for item in drawing.items)}</svg>"
    )


def data(drawing: Drawing) -> dict[str, Any]:
    """The drawing as JSON-ready data, for ``detail.js`` (the shapes are their own data)."""
    return {
        "cls": drawing.cls,
        "w": drawing.width,
        "h": drawing.height,
        "label": drawing.label,
        "items": drawing.items,
    }
