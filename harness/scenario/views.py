"""A scenario's nodes as a deprecation rule reads them: keys with merges followed, the sweep's
axes, and every place where a fault or a section of the link is written (the sweep included:
``faults[0]: [{...}, {...}]`` writes faults too).

Nothing here reports a mistake: a rule only looks for the forms it knows, and the validator,
which runs after the rules, reports everything else where it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import Issues, KeyPath
from harness.config.nodes import Pairs, mapping_pairs
from harness.config.paths import PathError, parse_path

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"


@dataclass(frozen=True, slots=True)
class Site:
    """A mapping where keys of one kind are written: a fault, a section of the link."""

    node: MappingNode
    #: its key path in the scenario, for messages (``faults[1]``, ``sweep.faults[0][2]``)
    path: KeyPath
    #: the key path a sweep axis would name it by (``("faults", 1)``); None for a mapping
    #: written as a value of the sweep itself
    swept_as: KeyPath | None


@dataclass(frozen=True, slots=True)
class Axis:
    """One key of ``sweep`` whose key path parses."""

    parts: KeyPath
    key: ScalarNode
    values: Node


def owner_of(node: MappingNode, key: str, depth: int = 0) -> MappingNode | None:
    """The mapping where ``key`` of ``node`` is written: ``node`` itself, or the mapping a
    merge (``<<: *base``) brings it from, with YAML's precedence (explicit keys first, then
    the merged mappings in order)."""
    merged: list[MappingNode] = []
    for name, value in node.value:
        if name.tag == _MERGE:
            items = value.value if isinstance(value, SequenceNode) else [value]
            merged += [item for item in items if isinstance(item, MappingNode)]
        elif isinstance(name, ScalarNode) and name.value == key:
            return node
    if depth >= 32:  # a merge loop: the validator reports it
        return None
    for source in merged:
        if source is not node and (found := owner_of(source, key, depth + 1)) is not None:
            return found
    return None


def text_of(node: Node | None) -> str | None:
    """The text of a scalar written as text (not a number, a boolean, null), else None."""
    if not isinstance(node, ScalarNode) or node.tag != _STR:
        return None
    return str(node.value)


class Lookup:
    """Keys of mappings, looked up without reporting their mistakes and kept apart from the
    validator's (which then looks them up again and reports them); one for a file."""

    def __init__(self) -> None:
        self._cache: dict[MappingNode, Pairs] = {}

    def pairs(self, node: Node | None) -> Pairs:
        """The keys of ``node`` (merges followed); none when it is not a mapping."""
        if not isinstance(node, MappingNode):
            return {}
        return mapping_pairs(node, (), Issues(""), cache=self._cache)


class ScenarioView:
    """One scenario's mapping (or a ``tearline proxy --faults`` file's), for rules."""

    def __init__(self, node: MappingNode, lookup: Lookup | None = None) -> None:
        self.node = node
        self.pairs = (lookup or Lookup()).pairs
        self._axes: list[Axis] | None = None

    def get(self, *keys: str) -> Node | None:
        """The node at ``keys`` from the scenario's top, or None where one is missing."""
        node: Node | None = self.node
        for key in keys:
            pair = self.pairs(node).get(key)
            node = pair[1] if pair is not None else None
        return node

    def axes(self) -> list[Axis]:
        """The sweep's axes whose key paths parse."""
        if self._axes is None:
            self._axes = []
            for key, (key_node, values) in self.pairs(self.get("sweep")).items():
                try:
                    self._axes.append(Axis(parse_path(key), key_node, values))
                except PathError:
                    continue  # the sweep's reader reports it
        return self._axes

    def swept(self, parts: KeyPath) -> bool:
        """Whether an axis changes the value at ``parts`` (it names it, or a key above or
        inside it)."""
        for axis in self.axes():
            shorter = min(len(axis.parts), len(parts))
            if axis.parts[:shorter] == parts[:shorter]:
                return True
        return False

    def faults(self) -> Iterator[Site]:
        """Every fault mapping: in ``faults``, and in the values of a sweep of ``faults`` or
        of one of its items."""
        written = self.get("faults")
        if isinstance(written, SequenceNode):
            for i, item in enumerate(written.value):
                if isinstance(item, MappingNode):
                    yield Site(item, ("faults", i), ("faults", i))
        for axis in self.axes():
            if axis.parts[:1] != ("faults",) or not isinstance(axis.values, SequenceNode):
                continue
            where = ("sweep", axis.key.value)
            for j, value in enumerate(axis.values.value):
                if len(axis.parts) == 2 and isinstance(value, MappingNode):
                    yield Site(value, (*where, j), None)
                elif len(axis.parts) == 1 and isinstance(value, SequenceNode):
                    for k, item in enumerate(value.value):
                        if isinstance(item, MappingNode):
                            yield Site(item, (*where, j, k), None)

    def sections(self, keys: KeyPath) -> Iterator[Site]:
        """The mapping at ``keys`` (``("link", "consumer")``) as written, and each mapping a
        sweep of exactly that key path gives it."""
        node = self.get(*(str(key) for key in keys))
        if isinstance(node, MappingNode):
            yield Site(node, keys, keys)
        for axis in self.axes():
            if axis.parts == keys and isinstance(axis.values, SequenceNode):
                for j, value in enumerate(axis.values.value):
                    if isinstance(value, MappingNode):
                        yield Site(value, ("sweep", axis.key.value, j), None)
