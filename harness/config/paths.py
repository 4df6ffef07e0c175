"""Key paths into a scenario (``faults[0].at.offset``): parse, find the type, replace a value.

A path names YAML keys (not Python attributes) and list indices. Walking it follows the actual
values, so ``faults[0]`` is the concrete fault class written there; a ``None`` sub-config on the
way (``link.tokens`` not written) is taken as its defaults, so ``link.tokens.count`` can be swept
without writing ``tokens``. Replacing rebuilds each dataclass on the way with
``dataclasses.replace``, which re-runs its ``__post_init__``: a swept value that breaks a
cross-field rule raises ValueError exactly as if it had been written in place.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from harness.config.constraints import suggest
from harness.config.fields import yaml_fields
from harness.config.issues import KeyPath, clip_repr, render_path

_SEGMENT_TEXT = r"[A-Za-z_][A-Za-z0-9_-]*(?:\[[0-9]+\])*"
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[[0-9]+\])*)")
#: A whole key path, for JSON Schema's ``propertyNames`` of ``sweep``.
PATH_PATTERN = rf"^{_SEGMENT_TEXT}(?:\.{_SEGMENT_TEXT})*$"


class PathError(ValueError):
    """A key path that is malformed or names nothing in this scenario."""


def parse_path(text: str) -> KeyPath:
    """``"faults[0].at.offset"`` -> ``("faults", 0, "at", "offset")``."""
    parts: list[str | int] = []
    for segment in text.split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise PathError(
                f"not a key path: {clip_repr(text)} (write keys joined by '.', list items as [0])"
            )
        parts.append(match[1])
        parts.extend(int(index) for index in re.findall(r"\[([0-9]+)\]", match[2]))
    return tuple(parts)


def base_type(hint: Any) -> Any:
    """The type under ``Annotated`` and ``| None``."""
    while True:
        origin = get_origin(hint)
        if origin is Annotated:
            hint = get_args(hint)[0]
        elif origin in (Union, UnionType):
            options = [a for a in get_args(hint) if a is not NoneType]
            if len(options) != 1:
                return hint
            hint = options[0]
        else:
            return hint


def _dataclass_of(obj: object, hint: Any) -> type | None:
    if obj is not None:
        return type(obj) if dataclasses.is_dataclass(obj) else None
    base = base_type(hint)
    return base if isinstance(base, type) and dataclasses.is_dataclass(base) else None


def _default(obj: object, hint: Any) -> object:
    """``obj``, or when it is None the defaults of its dataclass type."""
    if obj is None:
        cls = _dataclass_of(obj, hint)
        if cls is not None:
            return cls()
    return obj


def _step(obj: object, hint: Any, part: str | int, where: KeyPath) -> tuple[object, Any]:
    """The value and type one step down from ``obj``."""
    here = render_path(where) or "the scenario"
    if isinstance(part, int):
        if not isinstance(obj, tuple):
            raise PathError(f"{here} is not a list")
        if not 0 <= part < len(obj):
            raise PathError(f"{here} has {len(obj)} item(s), so no [{part}]")
        return obj[part], get_args(base_type(hint))[0]
    cls = _dataclass_of(obj, hint)
    if cls is None:
        raise PathError(f"{here} has no keys")
    fields = {k: f for k, f in yaml_fields(cls).items() if not f.custom}
    if part not in fields:
        raise PathError(
            f"{here} has no key {clip_repr(part)}{suggest(part, list(fields), list_all_up_to=12)}"
        )
    info = fields[part]
    return getattr(_default(obj, hint), info.name), info.hint


def resolve(root: object, path: KeyPath) -> Any:
    """The type hint of the value at ``path`` in ``root``; PathError if there is none."""
    obj, hint = root, type(root)
    for i, part in enumerate(path):
        obj, hint = _step(obj, hint, part, path[:i])
    return hint


def apply(root: object, path: KeyPath, value: object, check: Callable[[object], None]) -> Any:
    """A copy of ``root`` with ``value`` at ``path``; ``check`` runs on every rebuilt dataclass
    (for rules kept outside the classes). Raises what ``__post_init__`` or ``check`` raise."""
    return _apply(root, type(root), path, value, check)


def _apply(
    obj: object, hint: Any, path: KeyPath, value: object, check: Callable[[object], None]
) -> Any:
    if not path:
        return value
    part, rest = path[0], path[1:]
    if isinstance(part, int):
        assert isinstance(obj, tuple)
        items = list(obj)
        items[part] = _apply(items[part], get_args(base_type(hint))[0], rest, value, check)
        return tuple(items)
    current: Any = _default(obj, hint)
    cls: type = current.__class__
    info = yaml_fields(cls)[part]
    child = _apply(getattr(current, info.name), info.hint, rest, value, check)
    rebuilt = dataclasses.replace(current, **{info.name: child})
    check(rebuilt)
    return rebuilt
