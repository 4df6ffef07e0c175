"""Where a fault applies: one ``Position``, its rules written once, and their JSON Schema.

A position is one anchor (``offset``, ``frame``, ``utf8_char``, ``match``, ``request_end`` or
``after_ms``) plus
refinements that only mean something with their anchor (``frame_offset`` or ``fraction`` with
``frame``, ``char_byte`` with ``utf8_char``). The bounds of each value sit on its type
(``Annotated[int, Ge(0)]``); the rules between fields are the tables below. ``check_position``
(run when a ``Position`` is built) and ``POSITION_SCHEMA`` (the scenario JSON Schema) both read
them, so the loader, the schema and code that builds positions agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from harness.config.checks import check_fields
from harness.config.constraints import Ge, Le, MinLen
from harness.config.limits import MAX_BYTES, MAX_COUNT, MAX_DURATION_MS
from harness.errors import FieldError

#: Exactly one of these places the fault.
ANCHORS = ("offset", "frame", "utf8_char", "match", "request_end", "after_ms")
#: refinement -> the anchor it needs
REFINES = {"frame_offset": "frame", "fraction": "frame", "char_byte": "utf8_char"}
#: refinements that exclude each other
EXCLUSIVE = (("frame_offset", "fraction"),)


@dataclass(frozen=True, slots=True)
class Position:
    """Where a fault applies, in the source's byte stream of one direction. Exactly one of
    ``offset``, ``frame``, ``utf8_char``, ``match``, ``request_end``, ``after_ms`` is set.

    - ``offset``: absolute byte offset (0 = before the first byte).
    - ``frame`` (1-based message index) with ``frame_offset`` (bytes into the bytes that frame
      occupies on the wire) or ``fraction`` (0.0-1.0 of them); default: the frame's first byte.
    - ``utf8_char`` (1-based index of a multi-byte UTF-8 character in the stream) with
      ``char_byte`` (1 = cut after its first byte).
    - ``match``: the first occurrence of this UTF-8 text; the position is its first byte.
    - ``request_end``: (``true``; the consumer's direction only) the byte after the consumer's
      request, whatever its length: its HTTP request head on SSE and WebSocket, the HTTP/2
      frame that ends its request stream on gRPC, byte 0 on framings without a request.
    - ``after_ms``: time since the connection's first byte, for time-triggered faults.
    """

    #: absolute byte offset in the stream (0 = before the first byte)
    offset: Annotated[int, Ge(0), Le(MAX_BYTES)] | None = None
    #: a message, counted from 1
    frame: Annotated[int, Ge(1), Le(MAX_COUNT)] | None = None
    #: bytes into that frame as it is on the wire (with frame)
    frame_offset: Annotated[int, Ge(0), Le(MAX_BYTES)] | None = None
    #: how far into that frame, 0.0-1.0 of its bytes on the wire (with frame)
    fraction: Annotated[float, Ge(0), Le(1)] | None = None
    #: a multi-byte UTF-8 character of the stream, counted from 1
    utf8_char: Annotated[int, Ge(1), Le(MAX_COUNT)] | None = None
    #: cut after this many bytes of that character: 1, 2 or 3 (with utf8_char)
    char_byte: Annotated[int, Ge(1), Le(3)] = 1
    #: the first occurrence of this UTF-8 text; the position is its first byte
    match: Annotated[str, MinLen(1)] | None = None
    #: right after the consumer's request (true; in the consumer's direction)
    request_end: Literal[True] | None = None
    #: time since the connection's first byte, in milliseconds
    after_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] | None = None

    def __post_init__(self) -> None:
        check_position(self)

    @property
    def anchor(self) -> str:
        """The name of the field that places this position."""
        return next(name for name in ANCHORS if getattr(self, name) is not None)

    @property
    def is_time(self) -> bool:
        return self.after_ms is not None

    def describe(self) -> str:
        """A few words for timelines and messages: ``frame 3 + 0.5``, ``byte 17``."""
        if self.frame is not None:
            inside = f" + {self.frame_offset} B" if self.frame_offset is not None else ""
            inside = f" at {self.fraction:g}" if self.fraction is not None else inside
            return f"frame {self.frame}{inside}"
        if self.utf8_char is not None:
            return f"UTF-8 character {self.utf8_char}, byte {self.char_byte}"
        if self.match is not None:
            return f"match {self.match!r}"
        if self.request_end is not None:
            return "the request's end"
        if self.after_ms is not None:
            return f"{self.after_ms:g} ms"
        return f"byte {self.offset}"


def check_position(position: Position) -> None:
    """Raise ``FieldError`` (path: the key at fault) for the first rule ``position`` breaks."""
    anchors = [name for name in ANCHORS if getattr(position, name) is not None]
    if len(anchors) != 1:
        got = f" (got {', '.join(anchors)})" if anchors else ""
        raise FieldError(f"give exactly one of {', '.join(ANCHORS)}{got}")
    if position.request_end is not None and position.request_end is not True:
        raise FieldError("only true (or leave it out)", path=("request_end",))
    for refinement, anchor in REFINES.items():
        if _is_set(position, refinement) and getattr(position, anchor) is None:
            raise FieldError(f"only with {anchor}", path=(refinement,))
    for first, second in EXCLUSIVE:
        if _is_set(position, first) and _is_set(position, second):
            raise FieldError(f"give either {first} or {second}, not both", path=(second,))
    check_fields(position)


def _is_set(position: Position, name: str) -> bool:
    """A refinement is set when it differs from its default (``char_byte`` defaults to 1)."""
    value = getattr(position, name)
    return value is not None and not (name == "char_byte" and value == 1)


def require_bytes(position: Position) -> None:
    """For faults that need a byte position: ``after_ms`` cannot place them."""
    if position.after_ms is not None:
        raise FieldError("this fault needs a byte position, not a time", path=("after_ms",))


#: JSON Schema keywords added to Position's object schema: the tables above, declaratively
#: (the value bounds come from the field types).
POSITION_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in ANCHORS
    ],
    "dependentRequired": {refinement: [anchor] for refinement, anchor in REFINES.items()},
    "allOf": [{"not": {"required": list(pair)}} for pair in EXCLUSIVE],
}
