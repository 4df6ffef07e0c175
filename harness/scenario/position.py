"""The rules of a fault ``Position`` (``harness.faults.base``), which that class does not check.

A position is one anchor (``offset``, ``frame``, ``utf8_char``, ``match`` or ``after_ms``)
plus refinements that only mean something with their anchor (``frame_offset``/``fraction`` with
``frame``, ``char_byte`` with ``utf8_char``). ``check_position`` is registered with the
validator, so a bad position is reported like any ``__post_init__`` error; ``POSITION_SCHEMA``
says the same to JSON Schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.faults.base import Position

ANCHORS = ("offset", "frame", "utf8_char", "match", "after_ms")

# (field, rule it must satisfy when set, the rule in words)
_BOUNDS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("offset", lambda v: v >= 0, "must be >= 0"),
    ("frame", lambda v: v >= 1, "must be >= 1, frames count from 1"),
    ("frame_offset", lambda v: v >= 0, "must be >= 0"),
    ("fraction", lambda v: 0.0 <= v <= 1.0, "must be between 0.0 and 1.0"),
    ("utf8_char", lambda v: v >= 1, "must be >= 1, characters count from 1"),
    ("char_byte", lambda v: 1 <= v <= 3, "must be 1, 2 or 3, bytes into the character"),
    ("match", lambda v: v != "", "must not be empty"),
    ("after_ms", lambda v: v >= 0, "must be >= 0"),
)


def check_position(position: Position) -> None:
    """Raise ``ValueError("field: message")`` for the first rule ``position`` breaks."""
    anchors = [name for name in ANCHORS if getattr(position, name) is not None]
    if len(anchors) != 1:
        got = f" (got {', '.join(anchors)})" if anchors else ""
        raise ValueError(f"give exactly one of {', '.join(ANCHORS)}{got}")
    if position.frame is None:
        for name in ("frame_offset", "fraction"):
            if getattr(position, name) is not None:
                raise ValueError(f"{name}: only with frame")
    if position.frame_offset is not None and position.fraction is not None:
        raise ValueError("fraction: give either frame_offset or fraction, not both")
    if position.utf8_char is None and position.char_byte != 1:
        raise ValueError("char_byte: only with utf8_char")
    for name, rule, words in _BOUNDS:
        value = getattr(position, name)
        if value is not None and not rule(value):
            raise ValueError(f"{name}: {words} (got {value!r})")


#: JSON Schema keywords added to Position's object schema: the same rules, declaratively.
POSITION_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in ANCHORS
    ],
    "dependentRequired": {
        "frame_offset": ["frame"],
        "fraction": ["frame"],
        "char_byte": ["utf8_char"],
    },
    "not": {"required": ["frame_offset", "fraction"]},
    "properties": {
        "offset": {"minimum": 0},
        "frame": {"minimum": 1},
        "frame_offset": {"minimum": 0},
        "fraction": {"minimum": 0, "maximum": 1},
        "utf8_char": {"minimum": 1},
        "char_byte": {"minimum": 1, "maximum": 3},
        "match": {"minLength": 1},
        "after_ms": {"minimum": 0},
    },
}


#: The rules the validator runs on classes that cannot check themselves.
EXTRA_CHECKS: dict[type, Callable[[Any], None]] = {Position: check_position}
