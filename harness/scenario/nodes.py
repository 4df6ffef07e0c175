"""Safe YAML to nodes: composition, scalar values, mapping keys, with line numbers kept.

We compose (``yaml.compose`` with ``SafeLoader``) instead of loading so every value keeps its
line for error messages, and nothing is ever constructed from a tag: a ``!!python/object`` or a
``!custom`` tag is a mistake reported at its line, not code. Aliases are followed (they are how
a list of scenarios shares a ``link``); they cannot blow up, because validation only walks the
keys the model declares and never descends into a value of the wrong shape. Merge keys
(``<<: *defaults``) are supported, explicit keys winning over merged ones as YAML says.
"""

from __future__ import annotations

from yaml import MarkedYAMLError, SafeLoader, YAMLError, compose
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from harness.scenario.errors import Issues, KeyPath

Scalar = str | int | float | bool | None
Pairs = dict[str, tuple[ScalarNode, Node]]

_TAG = "tag:yaml.org,2002:"
_MERGE = _TAG + "merge"
# Tags a plain or quoted scalar may carry; timestamps read as their text (a date in `source`).
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_CONSTRUCT = SafeConstructor()


def line_of(node: Node) -> int:
    """The 1-based line where ``node`` starts."""
    return int(node.start_mark.line) + 1


def parse(text: str, issues: Issues) -> Node | None:
    """The document's root node; None (with an issue) on a syntax error or an empty file."""
    try:
        root: Node | None = compose(text, Loader=SafeLoader)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = int(mark.line) + 1 if mark is not None else 0
        words = ", ".join(part for part in (err.context, err.problem) if part)
        issues.add(line, (), f"YAML syntax error: {words}")
        return None
    except ReaderError as err:
        issues.add(text[: err.position].count("\n") + 1, (), f"YAML syntax error: {err.reason}")
        return None
    except RecursionError:  # PyYAML composes recursively: [[[[...]]]] thousands deep
        issues.add(0, (), "YAML nested too deeply")
        return None
    except YAMLError as err:  # pragma: no cover - every PyYAML error above carries a mark
        issues.add(0, (), f"YAML syntax error: {err}")
        return None
    if root is None:
        issues.add(0, (), "empty file: expected a scenario or a list of scenarios")
    return root


class TagError(ValueError):
    """A scalar with a tag we do not construct."""


def tag_problem(node: Node) -> str | None:
    """A complaint about an explicit tag we do not accept (``!!python/object``, ``!custom``)."""
    if isinstance(node, MappingNode):
        ok = node.tag == _TAG + "map"
    elif isinstance(node, SequenceNode):
        ok = node.tag == _TAG + "seq"
    else:
        ok = node.tag in _SCALAR_TAGS
    return None if ok else f"unsupported YAML tag {node.tag.replace(_TAG, '!!')!r}"


def scalar_value(node: ScalarNode) -> Scalar:
    """The Python value of a scalar by its (resolved or explicit) YAML tag."""
    tag = node.tag
    problem = tag_problem(node)
    if problem is not None:
        raise TagError(problem)
    if tag == _TAG + "int":
        return int(_CONSTRUCT.construct_yaml_int(node))
    if tag == _TAG + "float":
        return float(_CONSTRUCT.construct_yaml_float(node))
    if tag == _TAG + "bool":
        return bool(_CONSTRUCT.construct_yaml_bool(node))
    if tag == _TAG + "null":
        return None
    return str(node.value)


def describe(node: Node) -> str:
    """A few words for "(got ...)" in messages."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    try:
        return describe_value(scalar_value(node))  # type: ignore[arg-type]
    except TagError:
        return f"a value tagged {node.tag.replace(_TAG, '!!')!r}"


def describe_value(value: object) -> str:
    """A few words for a scalar value in messages: ``integer 5``, ``string 'x'``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value if len(value) <= 40 else value[:37] + '...'!r}"
    return type(value).__name__


def mapping_pairs(node: MappingNode, path: KeyPath, issues: Issues) -> Pairs:
    """Key -> (key node, value node), reporting non-string and duplicate keys."""
    return _pairs(node, path, issues, frozenset())


def _pairs(node: MappingNode, path: KeyPath, issues: Issues, seen: frozenset[int]) -> Pairs:
    explicit: Pairs = {}
    merged: Pairs = {}
    for key, value in node.value:
        if key.tag == _MERGE:
            for source in _merge_sources(value, path, issues, seen | {id(node)}):
                for name, pair in _pairs(source, path, issues, seen | {id(node)}).items():
                    merged.setdefault(name, pair)  # earlier sources win, as YAML says
            continue
        if not isinstance(key, ScalarNode) or key.tag != _TAG + "str":
            issues.add(line_of(key), path, f"keys must be strings (got {describe(key)})")
            continue
        if key.value in explicit:
            first = line_of(explicit[key.value][0])
            issues.add(line_of(key), (*path, key.value), f"duplicate key (first at line {first})")
            continue
        explicit[key.value] = (key, value)
    return merged | explicit


def _merge_sources(
    value: Node, path: KeyPath, issues: Issues, seen: frozenset[int]
) -> list[MappingNode]:
    items = value.value if isinstance(value, SequenceNode) else [value]
    sources = []
    for item in items:
        if not isinstance(item, MappingNode):
            issues.add(line_of(item), path, f"'<<' merges mappings only (got {describe(item)})")
        elif id(item) in seen:
            issues.add(line_of(item), path, "'<<' merges a mapping into itself")
        else:
            sources.append(item)
    return sources
