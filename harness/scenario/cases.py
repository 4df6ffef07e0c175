"""Cases: the concrete runs of a scenario, one per combination of its sweep values.

A case id names the file, the scenario and the swept values, shortest unambiguous axis names
first: ``envelope-cuts::rst-in-chunk[framing=sse,offset=17,seed=3]`` (no brackets without a
sweep). Cases come in sweep order (the first axis varies slowest). Each case has its own seed:
the scenario's ``seed`` (written or swept), else the first 8 bytes of SHA-256 of the case id, so
the same case gets the same seed on every machine and run (never Python's salted ``hash()``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol

from harness.config.fields import yaml_fields
from harness.scenario.errors import ScenarioError, SchemaIssue
from harness.scenario.model import Scenario, Span, SweepAxis
from harness.scenario.paths import apply, base_type, resolve
from harness.scenario.sweep import MAX_CASES
from harness.scenario.validate import Rules

_RULES = Rules()


@dataclass(frozen=True, slots=True)
class Case:
    """One concrete run of a scenario: sweep values applied, its own id and seed."""

    case_id: str
    #: the scenario with this case's sweep values in place and no sweep left
    scenario: Scenario
    seed: int
    #: (short axis name, value) of each swept key, in sweep order
    params: tuple[tuple[str, object], ...] = ()


class StreamShape(Protocol):
    """What a range's ``to: end`` is measured with (the prepared link of a scenario)."""

    @property
    def stream_length(self) -> int: ...

    def frame_length(self, index: int) -> int: ...


ShapeOf = Callable[[Scenario], StreamShape]


def expand(scenario: Scenario, shape_of: ShapeOf) -> list[Case]:
    """The cases of ``scenario``, in sweep order.

    ``shape_of(s)`` measures the stream of ``s`` (the runner's prepared link: its length in
    bytes, and each frame's); it is asked only when a range says ``to: end``, once per
    combination of the listed values, with those values applied; it may raise ``ValueError``
    (the reference link cannot make that stream). Raises ScenarioError when the sweep makes
    more than ``MAX_CASES`` cases or a combination breaks a rule between keys (each value alone
    was checked when the file was loaded).
    """
    axes = scenario.sweep
    names = short_names(axes)
    prefix = f"{PurePath(scenario.origin.file).stem}::" if scenario.origin else ""
    problems: list[str] = []
    layouts = _layouts(scenario, names, shape_of, problems)
    total = sum(math.prod(len(choices) for choices in layout) for _, layout in layouts)
    if total > MAX_CASES:
        raise ScenarioError(
            [_issue(scenario, f"makes {total} cases; at most {MAX_CASES} are allowed")]
        )
    cases: list[tuple[tuple[int, ...], Case]] = []
    for base, layout in layouts:
        for picks in itertools.product(*layout):
            params = tuple((name, value) for name, (_, value) in zip(names, picks, strict=True))
            case_id = _case_id(prefix, scenario.name, params)
            try:
                concrete = _apply_ranges(base, axes, picks)
            except ValueError as err:
                problems.append(f"case {case_id}: {err}")
                continue
            seed = stable_seed(case_id) if concrete.seed is None else concrete.seed
            cases.append(
                (tuple(index for index, _ in picks), Case(case_id, concrete, seed, params))
            )
    if problems:
        raise ScenarioError([_issue(scenario, problem) for problem in problems])
    return [case for _, case in sorted(cases, key=lambda pair: pair[0])]


#: Per axis, the values a case may take there, each with its index along the axis (for order).
Layout = list[list[tuple[int, object]]]


def _layouts(
    scenario: Scenario, names: list[str], shape_of: ShapeOf, problems: list[str]
) -> list[tuple[Scenario, Layout]]:
    """One layout per combination of listed values (see ``_layout``)."""
    axes = scenario.sweep
    listed = [
        list(enumerate(a.values)) if isinstance(a.values, tuple) else [(0, None)] for a in axes
    ]
    if math.prod(len(values) for values in listed) > MAX_CASES:
        raise ScenarioError([_issue(scenario, f"makes more than {MAX_CASES} cases")])
    layouts = []
    for combo in itertools.product(*listed):
        try:
            layouts.append(_layout(scenario, combo, shape_of))
        except ValueError as err:
            problems.append(f"{_shown(names, axes, combo)}: {err}")
    return layouts


def _layout(
    scenario: Scenario, combo: Sequence[tuple[int, object]], shape_of: ShapeOf
) -> tuple[Scenario, Layout]:
    """The scenario with the listed values of ``combo`` applied, and the values each axis takes
    with them (the one listed value, or the whole concrete range). ValueError when the values
    break a rule together, or a range turns out empty."""
    axes = scenario.sweep
    base = _apply_listed(scenario, axes, combo)
    shape: list[StreamShape] = []  # measured once, and only if an axis needs it

    def end_of(axis: SweepAxis) -> int:
        if not shape:
            shape.append(shape_of(base))
        frame = _swept_frame(base, axis)
        return shape[0].frame_length(frame) if frame is not None else shape[0].stream_length

    layout: Layout = []
    for axis, pick in zip(axes, combo, strict=True):
        if not isinstance(axis.values, Span):
            layout.append([pick])
            continue
        axis_end = end_of(axis) if axis.values.stop == "end" else 0
        values = _range(base, axis, axis.values, axis_end)
        if not values:
            raise ValueError(f"the range of {axis.path} is empty (`end` is {axis_end})")
        layout.append(list(enumerate(values)))
    return dataclasses.replace(base, sweep=()), layout


def _swept_frame(scenario: Scenario, axis: SweepAxis) -> int | None:
    """For ``...at.frame_offset: {to: end}``, ``end`` is the wire length of that position's
    frame (so the sweep visits every byte of one frame): the frame; None for any other axis."""
    if axis.parts[-1] != "frame_offset":
        return None
    position: object = scenario
    for part in axis.parts[:-1]:  # the value at the path (``resolve`` gives its type)
        position = position[part] if isinstance(part, int) else getattr(position, part)  # type: ignore[index]
    frame = getattr(position, "frame", None)
    return frame if isinstance(frame, int) else None


def _shown(names: list[str], axes: Sequence[SweepAxis], combo: Sequence[tuple[int, object]]) -> str:
    """The listed values of a combination, for messages: ``values framing=sse,seed=1``."""
    listed = zip(names, axes, combo, strict=True)
    shown = ",".join(f"{n}={_render(v)}" for n, a, (_, v) in listed if isinstance(a.values, tuple))
    return f"values {shown}" if shown else "the sweep"


def _apply_listed(
    scenario: Scenario, axes: Sequence[SweepAxis], combo: Sequence[tuple[int, object]]
) -> Scenario:
    for axis, (_, value) in zip(axes, combo, strict=True):
        if isinstance(axis.values, tuple):
            scenario = apply(scenario, axis.parts, value, _RULES.check)
    return scenario


def _apply_ranges(
    scenario: Scenario, axes: Sequence[SweepAxis], picks: Sequence[tuple[int, object]]
) -> Scenario:
    for axis, (_, value) in zip(axes, picks, strict=True):
        if isinstance(axis.values, Span):
            scenario = apply(scenario, axis.parts, value, _RULES.check)
    return scenario


def _range(scenario: Scenario, axis: SweepAxis, span: Span, end: int) -> Sequence[object]:
    """The values of a range axis: floats where the key is a float (as the validator makes
    them from YAML ints), else ints."""
    values = span.values(end)
    return (
        [float(v) for v in values] if base_type(resolve(scenario, axis.parts)) is float else values
    )


def stable_seed(case_id: str) -> int:
    """The seed of a case that names none: the first 8 bytes of SHA-256 of its id, big-endian."""
    return int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:8], "big")


def _case_id(prefix: str, name: str, params: tuple[tuple[str, object], ...]) -> str:
    swept = ",".join(f"{key}={_render(value)}" for key, value in params)
    return f"{prefix}{name}[{swept}]" if params else f"{prefix}{name}"


def short_names(axes: Sequence[SweepAxis]) -> list[str]:
    """Each axis's shortest trailing run of keys that no other axis ends with:
    ``faults[0].at.offset`` -> ``offset``, unless another axis also ends in ``offset``."""
    segments = [_segments(axis) for axis in axes]
    names = []
    for mine in segments:
        for n in range(1, len(mine) + 1):
            if all(other[-n:] != mine[-n:] for other in segments if other is not mine):
                break
        names.append(".".join(mine[-n:]))
    return names


def _segments(axis: SweepAxis) -> list[str]:
    """``("faults", 0, "at")`` -> ``["faults[0]", "at"]``: an index stays with its key."""
    segments: list[str] = []
    for part in axis.parts:
        if isinstance(part, int):
            segments[-1] += f"[{part}]"
        else:
            segments.append(part)
    return segments


def _render(value: object) -> str:
    """A value as it appears in a case id: YAML-like, compact, defaults left out."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 5, as YAML wrote it, rather than 5.0
    if isinstance(value, tuple):
        return "[" + ",".join(_render(item) for item in value) + "]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = yaml_fields(type(value)).values()
        shown = [(f.key, getattr(value, f.name)) for f in fields]
        given = [
            f"{key}:{_render(v)}"
            for (key, v), f in zip(shown, fields, strict=True)
            if v != f.default
        ]
        return "{" + ",".join(given) + "}"
    return str(value)


def _issue(scenario: Scenario, message: str) -> SchemaIssue:
    file = scenario.origin.file if scenario.origin else "<scenario>"
    line = scenario.sweep[0].line if scenario.sweep else 0
    return SchemaIssue(file, line, "sweep", message)
