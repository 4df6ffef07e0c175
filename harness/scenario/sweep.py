"""The ``sweep`` section: each key is a key path of the scenario, each value the list of values
it takes (or an integer range ``{from, to, step}``); the cases are their cartesian product.

Every swept value is validated as if written in place: against the type at its key path, then
by putting it there (which re-runs the rules between fields). Issues point into the sweep
itself, ``sweep.<key path>[i]``, at the value's line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import KeyPath
from harness.config.nodes import describe, line_of, mapping_pairs
from harness.config.paths import PathError, apply, parse_path, resolve
from harness.config.validate import INVALID, Validator, scalar_problem
from harness.scenario.model import Scenario, Span, SweepAxis

#: Largest number of cases one scenario may expand to.
MAX_CASES = 100_000
#: Keys that cannot be swept: the name is part of every case id.
_FIXED = ("name",)


def read_sweep(
    node: Node, scenario: Scenario | None, validator: Validator, line: int
) -> tuple[SweepAxis, ...]:
    """The axes of a ``sweep`` node. With ``scenario`` None (the rest of the scenario did not
    validate) only the shape is checked: there is nothing to resolve key paths against."""
    issues = validator.issues
    if not isinstance(node, MappingNode):
        issues.add(
            line_of(node),
            ("sweep",),
            f"expected a mapping of key paths to values (got {describe(node)})",
        )
        return ()
    pairs = mapping_pairs(node, ("sweep",), issues)
    # Each listed value is checked in place (a rebuilt scenario): count them before doing so.
    listed = math.prod(len(v.value) for _, v in pairs.values() if isinstance(v, SequenceNode))
    if listed > MAX_CASES:
        message = f"the listed values alone make {listed} cases; at most {MAX_CASES} are allowed"
        issues.add(line, ("sweep",), message)
        return ()
    axes: list[SweepAxis] = []
    for key, (key_node, value_node) in pairs.items():
        axis = _axis(key, key_node, value_node, scenario, validator)
        if axis is not None and not _overlaps(axis, axes, validator):
            axes.append(axis)
    size = math.prod(known_size(axis) for axis in axes)
    if size > MAX_CASES:
        issues.add(line, ("sweep",), f"makes {size} cases; at most {MAX_CASES} are allowed")
    return tuple(axes)


@dataclass(frozen=True, slots=True)
class _Target:
    """The key an axis sweeps: where its values go and how they are checked."""

    scenario: Scenario
    parts: KeyPath
    hint: Any
    validator: Validator
    where: KeyPath

    def fits(self, value: object, line: int, where: KeyPath) -> bool:
        """Put ``value`` in place; report what the rules between keys say about it."""
        try:
            apply(self.scenario, self.parts, value, self.validator.rules.check)
        except (ValueError, ArithmeticError) as err:  # a rule's FieldError, or a rule's bug
            self.validator.issues.add(line, where, str(err) or type(err).__name__)
            return False
        return True


def _axis(
    key: str, key_node: ScalarNode, node: Node, scenario: Scenario | None, validator: Validator
) -> SweepAxis | None:
    where: KeyPath = ("sweep", key)
    if not isinstance(node, SequenceNode | MappingNode):
        message = f"expected a list of values or {{from, to, step}} (got {describe(node)})"
        validator.issues.add(line_of(node), where, message)
        return None
    if isinstance(node, SequenceNode) and not node.value:
        validator.issues.add(line_of(node), where, "an empty list makes no cases")
        return None
    try:
        parts = parse_path(key)
        if parts[0] in _FIXED:
            raise PathError(f"{parts[0]!r} cannot be swept (it is part of every case id)")
        if scenario is None:
            return None
        target = _Target(scenario, parts, resolve(scenario, parts), validator, where)
    except PathError as err:
        validator.issues.add(line_of(key_node), where, str(err))
        return None
    values: tuple[object, ...] | Span | None
    if isinstance(node, SequenceNode):
        values = _list(target, node)
    else:
        values = _span(target, node, line_of(key_node))
    return None if values is None else SweepAxis(key, parts, values, line_of(key_node))


def _list(target: _Target, node: SequenceNode) -> tuple[object, ...] | None:
    values, ok = [], True
    for i, item in enumerate(node.value):
        where = (*target.where, i)
        value = target.validator.value(item, target.hint, where, line_of(item))
        good = value is not INVALID and target.fits(value, line_of(item), where)
        ok = ok and good
        values.append(value)
    return tuple(values) if ok else None


def _span(target: _Target, node: MappingNode, line: int) -> Span | None:
    span = target.validator.value(node, Span, target.where, line)
    if span is INVALID:
        return None
    assert isinstance(span, Span)
    ends = [("from", span.start)]
    if span.stop != "end":  # the last value taken, not the exclusive bound (and no range made)
        ends.append(("to", span.start + (span.size(0) - 1) * span.step))
    for label, value in ends:
        where = (*target.where, label)
        problem = scalar_problem(value, target.hint)
        if problem is not None:
            target.validator.issues.add(line_of(node), where, problem)
            return None
        if not target.fits(value, line_of(node), where):
            return None
    return span


def _overlaps(axis: SweepAxis, earlier: list[SweepAxis], validator: Validator) -> bool:
    for other in earlier:
        shorter = min(len(axis.parts), len(other.parts))
        if axis.parts[:shorter] == other.parts[:shorter]:
            message = f"overlaps {other.path!r}: sweep a key or a key inside it, not both"
            validator.issues.add(axis.line, ("sweep", axis.path), message)
            return True
    return False


def known_size(axis: SweepAxis) -> int:
    """Cases along ``axis`` as far as known before a run (``to: end`` counts as 1)."""
    if isinstance(axis.values, Span):  # counted, not made: len(range) overflows past 2**63
        return 1 if axis.values.stop == "end" else axis.values.size(0)
    return len(axis.values)
