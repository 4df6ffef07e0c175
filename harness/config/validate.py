"""A generic validator: YAML node + type hint -> value, or issues saying what is wrong where.

It knows the types our frozen config dataclasses use: ``int``, ``float`` (an int is accepted),
``str``, ``bool`` (never an int, and no int is a bool), ``Literal[...]``, ``X | Y | None``,
``tuple[T, ...]``, nested dataclasses, ``Annotated[T, constraint...]`` (see ``constraints.py``)
and *tagged families*: a base type whose concrete dataclass is picked by a ``kind`` key (the
faults). A dataclass's ``__post_init__`` may raise ``ValueError("field: message")``; the issue
is then attached to that field's key and line (any other ValueError to the whole mapping).

It never stops at the first mistake: each one is added to ``Issues`` and validation goes on with
the siblings; a value that failed is ``INVALID``, and a mapping with an INVALID field is not
constructed (its own cross-field rules would only repeat the news).

``StrEnum`` types (framing and payload names) are read like a ``Literal`` of their values.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.constraints import Constraint, finite, suggest
from harness.config.fields import yaml_fields
from harness.config.issues import Issues, clip_repr
from harness.config.nodes import (
    Pairs,
    ScalarError,
    describe,
    describe_value,
    line_of,
    mapping_pairs,
    scalar_value,
    tag_problem,
)
from harness.errors import FieldError, KeyPath, render_path


class _Invalid(enum.Enum):
    INVALID = "INVALID"


#: What ``Validator.value`` returns for a value it reported an issue about.
INVALID = _Invalid.INVALID
_SCALARS = (int, float, str, bool, NoneType)


@dataclass(frozen=True, slots=True)
class Tagged:
    """A family of dataclasses told apart by the value of one key (faults, by ``kind``)."""

    what: str
    kinds: Mapping[str, type]
    key: str = "kind"


@dataclass(frozen=True, slots=True)
class Rules:
    """What the validator needs besides the type hints themselves."""

    #: annotation (e.g. the ``Fault`` protocol) -> the family its values come from
    families: Mapping[Any, Tagged] = field(default_factory=dict)
    #: extra rules for classes we may not edit: called on each instance, raise ValueError
    checks: Mapping[type, Callable[[Any], None]] = field(default_factory=dict)

    def check(self, obj: object) -> None:
        """Run the extra rule for ``obj``'s class, if any."""
        extra = self.checks.get(type(obj))
        if extra is not None:
            extra(obj)


class Validator:
    """Turns nodes into values of given types, writing every mistake to ``issues``."""

    def __init__(self, issues: Issues, rules: Rules) -> None:
        self.issues = issues
        self.rules = rules

    def value(self, node: Node, hint: Any, path: KeyPath, line: int) -> Any:
        """``node`` as a value of type ``hint``, or INVALID. ``line`` is where the value is
        introduced (its key's line), for complaints about a mapping as a whole."""
        problem = tag_problem(node)
        if problem is not None:
            self.issues.add(line_of(node), path, problem)
            return INVALID
        origin = get_origin(hint)
        if origin is Annotated:
            return self._annotated(node, hint, path, line)
        if _family(self.rules, hint) is not None:
            return self._tagged(node, self.rules.families[hint], path, line)
        if origin in (Union, UnionType):
            return self._union(node, hint, path, line)
        if origin is tuple:
            return self._tuple(node, hint, path)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self._dataclass(node, hint, path, line)
        if origin is Literal or hint in _SCALARS or _is_enum(hint):
            return self._scalar(node, hint, path)
        raise TypeError(f"unsupported field type {hint!r} at {render_path(path) or 'the root'}")

    def _complain(self, node: Node, path: KeyPath, hint: Any) -> _Invalid:
        self.issues.add(
            line_of(node), path, f"expected {describe_type(hint)} (got {describe(node)})"
        )
        return INVALID

    def _annotated(self, node: Node, hint: Any, path: KeyPath, line: int) -> Any:
        base, *constraints = get_args(hint)
        value = self.value(node, base, path, line)
        if value is INVALID:
            return value
        for constraint in constraints:
            problem = constraint.check(value)
            if problem is not None:
                self.issues.add(line_of(node), path, problem)
                return INVALID
        return value

    def _scalar(self, node: Node, hint: Any, path: KeyPath) -> Any:
        if not isinstance(node, ScalarNode):
            return self._complain(node, path, hint)
        try:
            value = scalar_value(node)
        except ScalarError as err:
            self.issues.add(line_of(node), path, str(err))
            return INVALID
        problem = scalar_problem(value, hint)
        if problem is not None:
            self.issues.add(line_of(node), path, problem)
            return INVALID
        if _is_enum(hint):
            return hint(value)
        return float(value) if hint is float else value  # type: ignore[arg-type]

    def _union(self, node: Node, hint: Any, path: KeyPath, line: int) -> Any:
        options = get_args(hint)
        if NoneType in options and isinstance(node, ScalarNode) and node.tag.endswith(":null"):
            return None
        shape = _node_shape(node)
        fits = [a for a in options if a is not NoneType and _shape(self.rules, a) == shape]
        if shape == "scalar":
            try:
                value = scalar_value(node)  # type: ignore[arg-type]
            except ScalarError as err:
                self.issues.add(line_of(node), path, str(err))
                return INVALID
            fits = [a for a in fits if _base_accepts(a, value)]
        if not fits:
            return self._complain(node, path, hint)
        return self.value(node, fits[0], path, line)

    def _tuple(self, node: Node, hint: Any, path: KeyPath) -> Any:
        args = get_args(hint)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"unsupported field type {hint!r}: use tuple[T, ...]")
        if not isinstance(node, SequenceNode):
            return self._complain(node, path, hint)
        items = [
            self.value(item, args[0], (*path, i), line_of(item))
            for i, item in enumerate(node.value)
        ]
        return INVALID if INVALID in items else tuple(items)

    def _dataclass(self, node: Node, cls: type, path: KeyPath, line: int) -> Any:
        if not isinstance(node, MappingNode):
            return self._complain(node, path, cls)
        return self.build(cls, mapping_pairs(node, path, self.issues), path, line)

    def _tagged(self, node: Node, family: Tagged, path: KeyPath, line: int) -> Any:
        if not isinstance(node, MappingNode):
            self.issues.add(
                line_of(node),
                path,
                f"expected a mapping with a {family.key!r} key (got {describe(node)})",
            )
            return INVALID
        pairs = mapping_pairs(node, path, self.issues)
        kinds = sorted(family.kinds)
        if family.key not in pairs:
            self.issues.add(
                line,
                (*path, family.key),
                f"required key missing ({family.what} kinds: {', '.join(kinds)})",
            )
            return INVALID
        key_node, kind_node = pairs.pop(family.key)
        kind = self._scalar(kind_node, str, (*path, family.key))
        if kind is INVALID:
            return INVALID
        if kind not in family.kinds:
            hint = suggest(kind, kinds, list_all_up_to=len(kinds))
            self.issues.add(
                line_of(kind_node),
                (*path, family.key),
                f"unknown {family.what} kind {clip_repr(kind)}{hint}",
            )
            return INVALID
        cls = family.kinds[kind]
        if family.key in yaml_fields(cls):  # a family member may also keep its kind as a field
            pairs[family.key] = (key_node, kind_node)
        return self.build(cls, pairs, path, line)

    def build(self, cls: type, pairs: Pairs, path: KeyPath, line: int) -> Any:
        """An instance of dataclass ``cls`` from its key/value nodes, or INVALID."""
        fields = yaml_fields(cls)
        for key, (key_node, _) in pairs.items():
            if key not in fields:
                known = [k for k in fields]
                self.issues.add(
                    line_of(key_node),
                    (*path, key),
                    "unknown key" + suggest(key, known, list_all_up_to=12),
                )
        kwargs: dict[str, Any] = {}
        ok = True
        for key, info in fields.items():
            if info.custom:
                continue
            if key in pairs:
                key_node, value_node = pairs[key]
                value = self.value(value_node, info.hint, (*path, key), line_of(key_node))
                ok = ok and value is not INVALID
                kwargs[info.name] = value
            elif info.required:
                self.issues.add(line, (*path, key), "required key missing")
                ok = False
        return self._construct(cls, kwargs, pairs, path, line) if ok else INVALID

    def _construct(
        self, cls: type, kwargs: dict[str, Any], pairs: Pairs, path: KeyPath, line: int
    ) -> Any:
        try:
            obj = cls(**kwargs)
            self.rules.check(obj)
        except FieldError as err:
            # the rule names the key it is about: point there (the deepest key written)
            where = list(err.path)
            self.issues.add(line_inside(pairs, where, line), (*path, *err.path), err.message)
            return INVALID
        except (ValueError, ArithmeticError) as err:  # no key named: the mapping as a whole
            self.issues.add(line, path, str(err) or type(err).__name__)
            return INVALID
        return obj


def line_inside(pairs: Pairs, keys: list[str | int], line: int) -> int:
    """The line of the deepest of the nested ``keys`` that is written (else ``line``)."""
    for key in keys:
        if not isinstance(key, str) or key not in pairs:
            break
        key_node, value_node = pairs[key]
        line = line_of(key_node)
        if not isinstance(value_node, MappingNode):
            break
        pairs = mapping_pairs(value_node, (), Issues(""))  # already reported where it was read
    return line


def scalar_problem(value: object, hint: Any) -> str | None:
    """What is wrong with scalar ``value`` as a value of ``hint`` (type, then constraints)."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *constraints = get_args(hint)
        problem = scalar_problem(value, base)
        checks: list[Constraint] = constraints
        return problem or next((p for c in checks if (p := c.check(value)) is not None), None)
    if origin in (Union, UnionType):
        fits = [a for a in get_args(hint) if _base_accepts(a, value)]
        return scalar_problem(value, fits[0]) if fits else _expected(hint, value)
    if origin is Literal:
        return _literal_problem(value, get_args(hint))
    if _is_enum(hint):
        return _literal_problem(value, tuple(member.value for member in hint))
    if not _base_accepts(hint, value):
        hint_text = "; quote it" if hint is str and value is not None else ""
        return _expected(hint, value) + hint_text
    return finite(float(value)) if hint is float else None  # type: ignore[arg-type]


def _expected(hint: Any, value: object) -> str:
    return f"expected {describe_type(hint)} (got {describe_value(value)})"


def _literal_problem(value: object, allowed: tuple[Any, ...]) -> str | None:
    if any(value == a and type(value) is type(a) for a in allowed):
        return None
    listed = ", ".join(repr(a) for a in allowed)
    got = clip_repr(value) if isinstance(value, str) else repr(value)
    close = (
        suggest(value, [a for a in allowed if isinstance(a, str)]) if isinstance(value, str) else ""
    )
    close = close if close.startswith("; did") else ""
    return f"must be one of {listed} (got {got}){close}"


def _base_accepts(hint: Any, value: object) -> bool:
    """Does ``value`` have the right Python type for ``hint``, constraints aside?"""
    origin = get_origin(hint)
    if origin is Annotated:
        return _base_accepts(get_args(hint)[0], value)
    if origin in (Union, UnionType):
        return any(_base_accepts(a, value) for a in get_args(hint))
    if origin is Literal:
        return any(type(value) is type(a) for a in get_args(hint))
    if _is_enum(hint):
        return isinstance(value, str)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is NoneType:
        return value is None
    return hint in (str, bool) and type(value) is hint


def _is_enum(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, enum.Enum)


def _family(rules: Rules, hint: Any) -> Tagged | None:
    try:
        return rules.families.get(hint)
    except TypeError:  # an unhashable annotation is no family
        return None


def _node_shape(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "mapping"
    return "list" if isinstance(node, SequenceNode) else "scalar"


def _shape(rules: Rules, hint: Any) -> str:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if _family(rules, hint) is not None or (
        isinstance(hint, type) and dataclasses.is_dataclass(hint)
    ):
        return "mapping"
    return "list" if get_origin(hint) is tuple else "scalar"


def describe_type(hint: Any) -> str:
    """``int | None`` -> ``"an integer"``; for "expected ..." messages."""
    origin = get_origin(hint)
    if origin is Annotated:
        return describe_type(get_args(hint)[0])
    if origin in (Union, UnionType):
        parts = [describe_type(a) for a in get_args(hint) if a is not NoneType]
        return " or ".join(parts) if parts else "null"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(hint))
    if _is_enum(hint):
        return "one of " + ", ".join(repr(member.value) for member in hint)
    if origin is tuple:
        return "a list"
    names = {
        int: "an integer",
        float: "a number",
        str: "a string",
        bool: "true or false",
        NoneType: "null",
    }
    return names.get(hint, "a mapping")
