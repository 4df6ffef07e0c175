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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol

from harness.config.fields import yaml_fields
from harness.config.issues import Issues, ScenarioError, SchemaIssue
from harness.config.paths import apply, base_type, resolve
from harness.config.validate import Rules
from harness.scenario.model import Origin, Scenario, Span, SweepAxis
from harness.scenario.sweep import MAX_CASES, known_size

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


#: Largest number of cases of one run, all files together: expanding takes about 0.1 ms and
#: 1 KB a case here, so the limit is 20-30 s and a few hundred MB before anything runs.
MAX_RUN_CASES = 200_000


class RunLimitError(ScenarioError):
    """More cases than one run may have: a problem of the run, not of a file."""


def expand_all(
    scenarios: Iterable[Scenario], shape_of: ShapeOf, limit: int | None = None
) -> list[Case]:
    """The cases of every scenario, in order; RunLimitError (one issue, at the scenario that
    goes past it) when they are more than ``limit`` together. Each scenario is expanded only
    within what is left of the limit, so a run of many large sweeps stops at the first too
    many, before making their cases."""
    limit = MAX_RUN_CASES if limit is None else limit
    scenarios = list(scenarios)
    check_run_size(scenarios, limit)
    cases: list[Case] = []
    for scenario in scenarios:
        cases += expand_within(scenario, shape_of, limit, len(cases))
    return cases


def check_run_size(scenarios: Iterable[Scenario], limit: int = MAX_RUN_CASES) -> None:
    """RunLimitError if the cases known before any stream is measured (``to: end`` counts 1)
    are already more than ``limit``."""
    known = 0
    for scenario in scenarios:
        known += math.prod(known_size(axis) for axis in scenario.sweep)
        if known > limit:
            raise _too_many(scenario, known, limit)


def expand_within(scenario: Scenario, shape_of: ShapeOf, limit: int, made: int) -> list[Case]:
    """The cases of ``scenario`` when ``made`` cases of the run are made already: ScenarioError
    for the scenario's own problems, RunLimitError when the run would pass ``limit``."""
    left = limit - made
    try:
        return expand(scenario, shape_of, limit=min(MAX_CASES, left))
    except _OverLimitError as err:
        if left >= MAX_CASES:  # the scenario's own limit, already said so
            raise
        raise _too_many(scenario, made + err.count, limit) from None


def _too_many(scenario: Scenario, count: int, limit: int) -> RunLimitError:
    message = (
        f"with this scenario's cases the run makes at least {count}; at most {limit} in one "
        "run (-k selects only after): run fewer files or narrow their sweeps"
    )
    origin = scenario.origin or Origin("<scenario>", 0)
    return RunLimitError([SchemaIssue(origin.file, origin.line, "", message)])


class _OverLimitError(ScenarioError):
    """A sweep makes more cases than allowed; ``count`` of them at least."""

    def __init__(self, issues: list[SchemaIssue], count: int) -> None:
        super().__init__(issues)
        self.count = count


def expand(scenario: Scenario, shape_of: ShapeOf, *, limit: int | None = None) -> list[Case]:
    """The cases of ``scenario``, in sweep order.

    ``shape_of(s)`` measures the stream of ``s`` (the runner's prepared link: its length in
    bytes, and each frame's); it is asked only when a range says ``to: end``, once per
    combination of the listed values, with those values applied; it may raise ``ValueError``
    (the reference link cannot make that stream). Raises ScenarioError when the sweep makes
    more than ``limit`` (``MAX_CASES``) cases or a combination breaks a rule between keys (each
    value alone was checked when the file was loaded). Cases are counted before any is made.
    """
    limit = MAX_CASES if limit is None else limit
    axes = scenario.sweep
    names = short_names(axes)
    prefix = f"{PurePath(scenario.origin.file).stem}::" if scenario.origin else ""
    problems = Issues(scenario.origin.file if scenario.origin else "<scenario>")
    layouts = _layouts(scenario, names, shape_of, problems, limit)
    cases: list[tuple[tuple[int, ...], Case]] = []
    for base, layout in layouts:
        for picks in itertools.product(*layout):
            params = tuple((name, value) for name, (_, value) in zip(names, picks, strict=True))
            case_id = _case_id(prefix, scenario.name, params)
            try:
                concrete = _apply_ranges(base, axes, picks)
            except (ValueError, ArithmeticError) as err:
                problems.add(_line(scenario), ("sweep",), f"case {case_id}: {err}")
                continue
            seed = stable_seed(case_id) if concrete.seed is None else concrete.seed
            cases.append(
                (tuple(index for index, _ in picks), Case(case_id, concrete, seed, params))
            )
    if problems.items:
        raise ScenarioError(problems.listed())
    return [case for _, case in sorted(cases, key=lambda pair: pair[0])]


#: Per axis, the values a case may take there, each with its index along the axis (for order):
#: one listed value, or a whole range, made only once the cases are counted.
Layout = list[Iterable[tuple[int, object]]]


def _layouts(
    scenario: Scenario, names: list[str], shape_of: ShapeOf, problems: Issues, limit: int
) -> list[tuple[Scenario, Layout]]:
    """One layout per combination of listed values (see ``_layout``), counting the cases as
    each combination is measured and stopping as soon as there are too many."""
    axes = scenario.sweep
    listed = [
        list(enumerate(a.values)) if isinstance(a.values, tuple) else [(0, None)] for a in axes
    ]
    combinations = math.prod(len(values) for values in listed)
    if combinations > limit:
        message = f"makes {combinations} cases; at most {limit} are allowed"
        raise _OverLimitError([_issue(scenario, message)], combinations)
    layouts = []
    total = 0
    for done, combo in enumerate(itertools.product(*listed), start=1):
        try:
            base, layout, count = _layout(scenario, combo, shape_of)
        except _AxisError as err:
            problems.add(err.line, ("sweep",), f"{_shown(names, axes, combo)}: {err}")
            continue
        total += count
        if total > limit:
            many = f"{total}" if done == combinations else f"at least {total}"
            message = f"makes {many} cases; at most {limit} are allowed"
            raise _OverLimitError([_issue(scenario, message)], total)
        layouts.append((base, layout))
    return layouts


class _AxisError(ValueError):
    """A combination of listed values that cannot be laid out, and the line to point at."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def _layout(
    scenario: Scenario, combo: Sequence[tuple[int, object]], shape_of: ShapeOf
) -> tuple[Scenario, Layout, int]:
    """The scenario with the listed values of ``combo`` applied, the values each axis takes
    with them (the one listed value, or the whole concrete range, not yet made) and how many
    cases that is. _AxisError when the values break a rule together, the stream cannot be
    measured, or a range turns out empty."""
    axes = scenario.sweep
    try:
        base = _apply_listed(scenario, axes, combo)
    except (ValueError, ArithmeticError) as err:
        raise _AxisError(str(err), _line(scenario)) from None
    shape: list[StreamShape] = []  # measured once, and only if an axis needs it

    def end_of(axis: SweepAxis) -> int:
        try:
            if not shape:
                shape.append(shape_of(base))
            frame = _swept_frame(base, axis)
            return shape[0].frame_length(frame) if frame is not None else shape[0].stream_length
        except (ValueError, ArithmeticError) as err:  # the link cannot make this stream
            raise _AxisError(f"`end` of {axis.path}: {err}", axis.line) from None

    layout: Layout = []
    count = 1
    for axis, pick in zip(axes, combo, strict=True):
        if not isinstance(axis.values, Span):
            layout.append([pick])
            continue
        axis_end = end_of(axis) if axis.values.stop == "end" else 0
        size = axis.values.size(axis_end)
        if not size:
            message = f"the range of {axis.path} is empty (`end` is {axis_end})"
            raise _AxisError(message, axis.line)
        count *= size
        layout.append(enumerate(_range(base, axis, axis.values, axis_end)))
    return dataclasses.replace(base, sweep=()), layout, count


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


def _range(scenario: Scenario, axis: SweepAxis, span: Span, end: int) -> Iterable[object]:
    """The values of a range axis, lazily: floats where the key is a float (as the validator
    makes them from YAML ints), else ints."""
    values = span.values(end)
    return map(float, values) if base_type(resolve(scenario, axis.parts)) is float else values


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


def _line(scenario: Scenario) -> int:
    """Where a problem of the sweep as a whole is reported: its first axis."""
    return scenario.sweep[0].line if scenario.sweep else 0


def _issue(scenario: Scenario, message: str) -> SchemaIssue:
    file = scenario.origin.file if scenario.origin else "<scenario>"
    return SchemaIssue(file, _line(scenario), "sweep", message)
