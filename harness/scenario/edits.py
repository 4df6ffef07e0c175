"""Edits of a scenario file, each made twice from one description: to the composed YAML nodes
(what the loader reads, so a deprecated form is read as its new form) and to the file's text
(what ``tearline upgrade`` writes).

The text is edited in place from the positions the loader's own nodes carry (character offsets
and columns): every character outside the edited keys and values stays as it was, so comments,
anchors, key order, quoting, blank lines and layout are kept. An edit that cannot be made in
place safely (a value that is an anchor other keys alias) says so (``splices`` returns None) and
the file is left for a hand to change.

- ``Replace(owner, old, new)``: a scalar (a key or a value) becomes another;
- ``Insert(owner, before, key, value)``: a new key and value, written just before a key of a
  mapping (on a line of their own in a block mapping, as ``key: value, `` in a flow one);
- ``Remove(owner, key)``: a key of a mapping and its value are taken out (in a flow mapping
  with the comma that parts it from the next; in a block one, its lines).

A new kind of edit (moving a key into a new section, say) is one more class with ``apply`` and
``splices``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import Issues
from harness.config.nodes import (
    Pairs,
    Scalar,
    ScalarError,
    mapping_pairs,
    plain_tag,
    scalar_value,
)

_TAG = "tag:yaml.org,2002:"
# Characters that a YAML stream may not hold as they are, or that end a line in YAML.
_LINE_BREAKS = "\x85\u2028\u2029"
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Before a key of a block mapping, on its line: indentation, maybe the dashes of list items.
_BLOCK_LEAD = re.compile(r"[ ]*(?:-[ ]+)*")


@dataclass(frozen=True, slots=True)
class Splice:
    """Characters ``[start, end)`` of the text replaced by ``text`` (``start == end``: an
    insertion)."""

    start: int
    end: int
    text: str


class Edit(Protocol):
    """One change, made to the nodes or to the text."""

    def apply(self) -> bool:
        """Make the change in the composed nodes; False if what it changes is not there."""
        ...

    def splices(self, text: str, newline: str) -> list[Splice] | None:
        """The same change to ``text`` (lines ending in ``newline``), or None when it cannot
        be made in place safely."""
        ...


def render(value: Scalar) -> str:
    """``value`` as YAML text that reads back as exactly ``value``: plain when it can be,
    else double-quoted with escapes (every character that is not printable is escaped)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_./-]*", value) and plain_tag(value) == _TAG + "str":
        return value
    return '"' + "".join(_escape(ch) for ch in value) + '"'


def _escape(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable() and ch not in _LINE_BREAKS and ch != "\ufeff":
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def scalar_node(value: Scalar, where: Node) -> ScalarNode:
    """A node holding ``value``, placed where ``where`` is (its line is reported for it)."""
    if value is None:
        tag, text = _TAG + "null", "null"
    elif isinstance(value, bool):
        tag, text = _TAG + "bool", "true" if value else "false"
    elif isinstance(value, int):
        tag, text = _TAG + "int", str(value)
    elif isinstance(value, float):
        tag, text = _TAG + "float", repr(value)
    else:
        tag, text = _TAG + "str", value
    return ScalarNode(tag, text, where.start_mark, where.end_mark)


def _span(node: Node, text: str) -> tuple[int, int] | None:
    """Where ``node`` is written in ``text``; None when it carries an anchor (other keys may
    alias it, so changing it in place would change them too)."""
    start, end = int(node.start_mark.index), int(node.end_mark.index)
    written = text[start:end]
    if written.startswith("&"):  # (an alias's node is its anchor's: it starts with "&" too)
        return None
    return start, start + len(written.rstrip())  # a block scalar's span ends after its breaks


@dataclass(frozen=True, slots=True)
class Replace:
    """The scalar ``old`` (a key or a value of ``owner``, or an item of it) becomes ``new``."""

    owner: CollectionNode
    old: ScalarNode
    new: Scalar

    def apply(self) -> bool:
        node = scalar_node(self.new, self.old)
        items = self.owner.value
        for i, item in enumerate(items):
            if isinstance(self.owner, SequenceNode) and item is self.old:
                items[i] = node
                return True
            if isinstance(self.owner, MappingNode) and self.old in item:
                key, value = item
                items[i] = (node, value) if key is self.old else (key, node)
                return True
        return False

    def splices(self, text: str, newline: str) -> list[Splice] | None:
        span = _span(self.old, text)
        if span is None:
            return None
        return [Splice(span[0], span[1], render(self.new))]


@dataclass(frozen=True, slots=True)
class Insert:
    """``key: value`` written in ``owner`` just before its key ``before``."""

    owner: MappingNode
    before: ScalarNode
    key: str
    value: Scalar

    def apply(self) -> bool:
        items = self.owner.value
        for i, (key, _) in enumerate(items):
            if key is self.before:
                items.insert(i, (scalar_node(self.key, key), scalar_node(self.value, key)))
                return True
        return False

    def splices(self, text: str, newline: str) -> list[Splice] | None:
        span = _span(self.before, text)
        if span is None:
            return None
        at, entry = span[0], f"{render(self.key)}: {render(self.value)}"
        if self.owner.flow_style:
            return [Splice(at, at, f"{entry}, ")]
        line_start = text.rfind("\n", 0, at) + 1
        if not _BLOCK_LEAD.fullmatch(text[line_start:at]):
            return None  # an explicit "? key", or something else we do not lay out
        column = at - line_start
        return [Splice(at, at, f"{entry}{newline}{' ' * column}")]


@dataclass(frozen=True, slots=True)
class Remove:
    """Key ``key`` of ``owner`` is taken out, with its value."""

    owner: MappingNode
    key: ScalarNode

    def _index(self) -> int | None:
        return next((i for i, (key, _) in enumerate(self.owner.value) if key is self.key), None)

    def apply(self) -> bool:
        index = self._index()
        if index is not None:
            del self.owner.value[index]
        return index is not None

    def splices(self, text: str, newline: str) -> list[Splice] | None:
        index, pairs = self._index(), self.owner.value
        if index is None:
            return None
        key, value = _span(self.key, text), _span(pairs[index][1], text)
        if key is None or value is None:
            return None
        if self.owner.flow_style:
            return [self._flow(index, key[0], value[1], text)]
        return self._block(key[0], value[1], text)

    def _flow(self, index: int, start: int, end: int, text: str) -> Splice:
        """``a, k: v, b`` -> ``a, b``; ``a, k: v`` -> ``a``; ``k: v`` alone -> nothing."""
        pairs = self.owner.value
        if index + 1 < len(pairs):
            return Splice(start, int(pairs[index + 1][0].start_mark.index), "")
        if index > 0:
            before = pairs[index - 1][1]
            written = text[int(before.start_mark.index) : int(before.end_mark.index)]
            return Splice(int(before.start_mark.index) + len(written.rstrip()), end, "")
        return Splice(start, end, "")

    def _block(self, start: int, end: int, text: str) -> list[Splice] | None:
        """The key's lines, when the key starts its line and its value ends one (and it is not
        the mapping's only key, which would leave the mapping's key with no value)."""
        line_start = text.rfind("\n", 0, start) + 1
        lead = text[line_start:start]
        if len(self.owner.value) == 1 or lead.strip() or not _BLOCK_LEAD.fullmatch(lead):
            return None  # a key after a list item's dash, an explicit "? key", a lone key
        line_end = text.find("\n", end)
        rest = text[end:] if line_end == -1 else text[end:line_end]
        if rest.strip() and not rest.lstrip().startswith("#"):
            return None
        return [Splice(line_start, len(text) if line_end == -1 else line_end + 1, "")]


def apply_splices(text: str, splices: list[Splice]) -> str | None:
    """``text`` with every splice made; None if two of them overlap."""
    unique = list(dict.fromkeys(splices))
    # from the end, so that earlier offsets stay right; insertions at one place keep their order
    ordered = sorted(enumerate(unique), key=lambda n: (n[1].start, n[1].end, n[0]), reverse=True)
    limit = len(text) + 1
    for _, splice in ordered:
        if splice.end > limit or (splice.end == limit and splice.start < splice.end):
            return None
        text = text[: splice.start] + splice.text + text[splice.end :]
        limit = splice.start
    return text


def to_data(node: Node, cache: dict[MappingNode, Pairs] | None = None) -> object:
    """What ``node`` holds, as plain values (merges made, scalars by their tags): two texts
    that compose to equal data are read as the same scenarios."""
    cache = {} if cache is None else cache  # the validator's own lookups stay its own
    if isinstance(node, MappingNode):
        pairs = mapping_pairs(node, (), Issues(""), cache=cache)
        return {key: to_data(value, cache) for key, (_, value) in pairs.items()}
    if isinstance(node, SequenceNode):
        return [to_data(item, cache) for item in node.value]
    assert isinstance(node, ScalarNode)
    try:
        return (node.tag, scalar_value(node))
    except ScalarError:
        return (node.tag, node.value)
