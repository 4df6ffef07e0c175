"""Safe YAML to nodes: composition, scalar values, mapping keys, with line numbers kept.

We compose instead of loading so every value keeps its line for error messages, and nothing is
ever constructed from a tag: a ``!!python/object`` or a ``!custom`` tag is a mistake reported at
its line, not code. Aliases are followed (they are how a list of scenarios shares a ``link``);
merge keys (``<<: *defaults``) are supported, explicit keys winning over merged ones as YAML says.

Composition is our own and iterative (PyYAML's composer recurses, so ``[[[[...]]]]`` a few
hundred deep was a RecursionError without a line), over libyaml's parser when PyYAML has it
(several times faster than the pure-Python one) and PyYAML's own otherwise. It refuses, each
at its line: nesting deeper than ``MAX_DEPTH``, a document that aliases expand past
``MAX_NODES`` nodes (a "billion laughs"), an alias inside its own anchor, a second document.
Lines are counted as editors and grep count them (YAML also ends a line at a lone CR, NEL, LS
and PS; we do not).

Numbers follow YAML 1.1 plus one addition: a plain ``1e9`` (an exponent without a dot, which
YAML 1.1 reads as a string) is a number, and a number written with an exponent whose value is a
whole number is an integer (``records: 1e6`` is 1000000, ``1.5e3`` is 1500; ``2.5e0`` stays a
decimal). Numbers too long to be any key's value are refused before Python converts them.
"""

from __future__ import annotations

import decimal
import re
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any

import yaml
from yaml import MarkedYAMLError, YAMLError
from yaml.composer import ComposerError
from yaml.constructor import SafeConstructor
from yaml.error import Mark
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from harness.config.issues import Issues, KeyPath, clip_repr

#: Whether PyYAML has libyaml's parser (every wheel we install does).
HAVE_LIBYAML: bool = bool(getattr(yaml, "__with_libyaml__", False))

Scalar = str | int | float | bool | None
Pairs = dict[str, tuple[ScalarNode, Node]]

#: Deepest nesting of lists and mappings (a scenario needs about 8).
MAX_DEPTH = 64
#: Most nodes a document may have once aliases are expanded: more than any file under the size
#: limit has without aliases, far fewer than a "billion laughs" makes.
MAX_NODES = 1_000_000
#: Deepest chain of merges (``<<: *a`` where ``a`` merges another, ...).
MAX_MERGE_DEPTH = 32
#: Longest number text we convert: a 64-bit value in binary with separators fits.
MAX_NUMBER_CHARS = 100
#: A number written with an exponent beyond 10^40 is beyond every bound (the largest is 2^64).
_MAX_EXPONENT = 40

_TAG = "tag:yaml.org,2002:"
_MERGE = _TAG + "merge"
_INT, _FLOAT, _BOOL, _NULL, _STR = (_TAG + t for t in ("int", "float", "bool", "null", "str"))
# Tags a plain or quoted scalar may carry; timestamps read as their text (a date in `source`).
_SCALAR_TAGS = {_INT, _FLOAT, _BOOL, _NULL, _STR, _TAG + "timestamp"}
_CONSTRUCT = SafeConstructor()


class _Resolver(Resolver):
    """YAML 1.1's implicit types, plus numbers with an exponent and no dot (``1e9``)."""


_Resolver.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


class _PyEvents(Reader, Scanner, Parser, _Resolver):
    """PyYAML's pure-Python parser (events), with our resolver."""

    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        _Resolver.__init__(self)


if HAVE_LIBYAML:
    from yaml._yaml import CParser

    class _CEvents(CParser, _Resolver):
        """libyaml's parser (events), with our resolver."""

        def __init__(self, data: bytes) -> None:
            CParser.__init__(self, data)
            _Resolver.__init__(self)


def plain_tag(text: str) -> str:
    """The tag ``text`` written as a plain scalar resolves to: ``!!str`` unless it reads as a
    number, a boolean or null (``yes``, ``1e9``, ``~``)."""
    tag: str = _Resolver().resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return tag


def line_of(node: Node) -> int:
    """The 1-based line where ``node`` starts."""
    return int(node.start_mark.line) + 1


def parse(source: str | bytes, issues: Issues, *, fast: bool = True) -> Node | None:
    """The document's root node; None (with an issue) on a syntax error or an empty file.

    ``source`` is the file's text, or its UTF-8 bytes. ``fast=False`` uses the pure-Python
    parser even where libyaml is there (tests compare the two)."""
    use_c = fast and HAVE_LIBYAML
    text = source if isinstance(source, str) else source.decode("utf-8-sig", "replace")
    raw: str | bytes = text
    if use_c:
        raw = source if isinstance(source, bytes) else _encode(source)
        events: Any = _CEvents(raw)
    else:
        events = _PyEvents(text)
    lines = _Lines(text)
    try:
        root = _Composer(events, lines).document()
    except ReaderError as err:  # its position counts what the parser read: bytes or characters
        newline: Any = b"\n" if isinstance(raw, bytes) else "\n"
        issues.add(raw[: err.position].count(newline) + 1, (), f"YAML syntax error: {err.reason}")
        return None
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = lines.line(int(mark.line)) if mark is not None else 1
        words = ", ".join(part for part in (err.context, err.problem) if part)
        issues.add(line, (), f"YAML syntax error: {words}")
        return None
    except YAMLError as err:  # pragma: no cover - every PyYAML error above carries a mark
        issues.add(1, (), f"YAML syntax error: {err}")
        return None
    if root is None and not source:
        issues.add(0, (), "empty file: expected a scenario or a list of scenarios")
    elif root is None:
        issues.add(1, (), "no YAML document (only comments or blank lines): expected a scenario")
    return root


# Line ends YAML counts that editors and grep do not: a lone CR, NEL, LINE and PARAGRAPH SEP.
_ODD_BREAK = re.compile("\r(?!\n)|[\x85\u2028\u2029]")
_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


class _Lines:
    """YAML's line of a mark as the line an editor shows: only LF (or CRLF) ends a line there.
    Without odd line ends (nearly always) the two agree and marks are kept as they are."""

    def __init__(self, text: str) -> None:
        self.table: list[int] | None = None  # YAML line (0-based) -> line (1-based)
        if _ODD_BREAK.search(text) is None:
            return
        line, table = 1, [1]
        for match in _BREAK.finditer(text):
            line += match[0].endswith("\n")
            table.append(line)
        self.table = table

    def line(self, yaml_line: int) -> int:
        if self.table is None:
            return yaml_line + 1
        return self.table[min(yaml_line, len(self.table) - 1)]

    def mark(self, mark: Any) -> Any:
        if self.table is None:
            return mark
        line = self.line(int(mark.line)) - 1
        return Mark(mark.name, mark.index, line, mark.column, "", 0)  # no snippet: no buffer


def _encode(text: str) -> bytes:
    # A str from a caller may hold lone surrogates (a file's text never does: we decode it
    # strictly); libyaml then refuses the bytes at their offset, which gives the line.
    return text.encode("utf-8", "surrogatepass")


_NO_KEY = ScalarNode(_NULL, "")  # marks a mapping entry whose key is still to come


class _Composer:
    """Events to nodes with an explicit stack (no recursion), counting nodes as aliases expand
    them. Errors are ``ComposerError`` with the mark of the event at fault."""

    def __init__(self, events: Any, lines: _Lines) -> None:
        self.events = events
        self.lines = lines
        self.anchors: dict[str, tuple[Node, int]] = {}  # anchor -> (node, expanded size)
        self.open: set[str] = set()  # anchors of collections still being composed
        self.total = 0  # nodes so far, aliases expanded

    def document(self) -> Node | None:
        events = self.events
        events.get_event()  # StreamStartEvent
        if events.check_event(StreamEndEvent):
            return None
        start = events.get_event()  # DocumentStartEvent
        root = self._root()
        events.get_event()  # DocumentEndEvent
        if not events.check_event(StreamEndEvent):
            extra = events.get_event()
            raise ComposerError(
                "expected a single document in the stream",
                start.start_mark,
                "but found another document",
                extra.start_mark,
            )
        return root

    def _root(self) -> Node:
        # Each open collection: [node, pending key (or _NO_KEY), anchor, expanded size]
        stack: list[list[Any]] = []
        while True:
            event = self.events.get_event()
            value: Node
            if isinstance(event, SequenceEndEvent | MappingEndEvent):
                node, _, anchor, size = stack.pop()
                node.end_mark = self.lines.mark(event.end_mark)
                if anchor is not None:
                    self.open.discard(anchor)
                    self.anchors[anchor] = (node, size)
                value = node
            elif isinstance(event, AliasEvent):
                value, size = self._alias(event)
            elif isinstance(event, ScalarEvent):
                value, size = self._scalar(event), 1
            else:
                assert isinstance(event, CollectionStartEvent)
                stack.append([self._collection(event, len(stack)), _NO_KEY, event.anchor, 1])
                self._count(1, event)
                continue
            if not stack:
                return value
            self._attach(stack[-1], value, size)

    def _attach(self, parent: list[Any], value: Node, size: int) -> None:
        node = parent[0]
        parent[3] += size
        if isinstance(node, SequenceNode):
            node.value.append(value)
        elif parent[1] is _NO_KEY:
            parent[1] = value
        else:
            node.value.append((parent[1], value))
            parent[1] = _NO_KEY

    def _count(self, size: int, event: Any) -> None:
        self.total += size
        if self.total > MAX_NODES:
            raise ComposerError(
                None,
                None,
                f"aliases expand this document past {MAX_NODES} nodes",
                event.start_mark,
            )

    def _check_anchor(self, event: Any) -> None:
        anchor = event.anchor
        if anchor is not None and (anchor in self.anchors or anchor in self.open):
            raise ComposerError(None, None, f"duplicate anchor &{anchor}", event.start_mark)

    def _alias(self, event: Any) -> tuple[Node, int]:
        anchor = event.anchor
        if anchor in self.open:
            raise ComposerError(
                None, None, f"alias *{anchor} inside its own anchor", event.start_mark
            )
        if anchor not in self.anchors:
            raise ComposerError(None, None, f"undefined alias *{anchor}", event.start_mark)
        node, size = self.anchors[anchor]
        self._count(size, event)
        return node, size

    def _scalar(self, event: Any) -> ScalarNode:
        self._check_anchor(event)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.events.resolve(ScalarNode, event.value, event.implicit)
        start, end = self.lines.mark(event.start_mark), self.lines.mark(event.end_mark)
        node = ScalarNode(tag, event.value, start, end, style=event.style)
        if event.anchor is not None:
            self.anchors[event.anchor] = (node, 1)
        self._count(1, event)
        return node

    def _collection(self, event: Any, depth: int) -> CollectionNode:
        if depth >= MAX_DEPTH:
            raise ComposerError(None, None, f"nested more than {MAX_DEPTH} deep", event.start_mark)
        self._check_anchor(event)
        kind = MappingNode if isinstance(event, MappingStartEvent) else SequenceNode
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.events.resolve(kind, None, event.implicit)
        node = kind(tag, [], self.lines.mark(event.start_mark), None, flow_style=event.flow_style)
        if event.anchor is not None:
            self.open.add(event.anchor)
        return node


class ScalarError(ValueError):
    """A scalar we do not turn into a value: an unsupported tag, or a number beyond reason."""


class TagError(ScalarError):
    """A scalar with a tag we do not construct."""


def tag_problem(node: Node) -> str | None:
    """A complaint about an explicit tag we do not accept (``!!python/object``, ``!custom``)."""
    if isinstance(node, MappingNode):
        ok = node.tag == _TAG + "map"
    elif isinstance(node, SequenceNode):
        ok = node.tag == _TAG + "seq"
    else:
        ok = node.tag in _SCALAR_TAGS
    return None if ok else f"unsupported YAML tag {clip_repr(node.tag.replace(_TAG, '!!'))}"


def scalar_value(node: ScalarNode) -> Scalar:
    """The Python value of a scalar by its (resolved or explicit) YAML tag. ScalarError for a
    tag we do not construct and for a number no key could take."""
    tag = node.tag
    problem = tag_problem(node)
    if problem is not None:
        raise TagError(problem)
    if tag in (_INT, _FLOAT):
        return _number(node)
    if tag == _BOOL:
        return bool(_CONSTRUCT.construct_yaml_bool(node))
    if tag == _NULL:
        return None
    return str(node.value)


def _number(node: ScalarNode) -> int | float:
    text = str(node.value)
    if len(text) > MAX_NUMBER_CHARS:
        raise ScalarError(f"a number of {len(text)} characters is beyond every bound")
    construct: Callable[[ScalarNode], Any] = (
        _CONSTRUCT.construct_yaml_int if node.tag == _INT else _CONSTRUCT.construct_yaml_float
    )
    try:
        value = construct(node)
    except ValueError:  # `0x_`: the YAML 1.1 pattern allows it, Python's int() does not
        raise ScalarError(f"not a number: {clip_repr(text)}") from None
    if node.tag == _FLOAT and "e" in text.lower() and ":" not in text:
        return _exact_integer(text, float(value))
    return int(value) if node.tag == _INT else float(value)


def _exact_integer(text: str, value: float) -> int | float:
    """``1e6`` -> 1000000: a number written with an exponent that is a whole number (exactly,
    from its digits, not from the float) is an integer; ``2.5e0`` stays a decimal."""
    exact = decimal.Decimal(text.replace("_", ""))
    if exact.is_zero() or exact.adjusted() < 0:
        return value  # 0.0, 1e-3: below 1, a decimal (0e0 too: no need for an int zero)
    if exact.adjusted() > _MAX_EXPONENT:
        raise ScalarError(f"{clip_repr(text)} is beyond every bound (the largest is 2^64)")
    return int(exact) if exact == exact.to_integral_value() else value


def describe(node: Node) -> str:
    """A few words for "(got ...)" in messages."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if tag_problem(node) is not None:
        return f"a value tagged {clip_repr(node.tag.replace(_TAG, '!!'))}"
    try:
        return describe_value(scalar_value(node))  # type: ignore[arg-type]
    except ScalarError:
        return f"the number {clip_repr(str(node.value))}"


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
        return f"string {clip_repr(value)}"
    return type(value).__name__


# Pairs of each mapping node, computed once: a node reached again through an alias, or merged
# into many mappings, is neither re-walked (merges of merges were exponential) nor re-reported.
_PAIRS: weakref.WeakKeyDictionary[MappingNode, Pairs] = weakref.WeakKeyDictionary()


def forget_pairs() -> None:
    """Forget the pairs computed so far: for nodes edited after they were composed (a
    deprecated form read as its new form), whose merges may be cached in other mappings."""
    _PAIRS.clear()


#: Where pairs computed once are kept: the module's cache, or a caller's own.
PairsCache = MutableMapping[MappingNode, Pairs]


def mapping_pairs(
    node: MappingNode, path: KeyPath, issues: Issues, *, cache: PairsCache | None = None
) -> Pairs:
    """Key -> (key node, value node), reporting non-string and duplicate keys. A new dict each
    time (callers may take keys out), of pairs computed once. A look that reports nowhere (the
    deprecation rules, before validation) brings its own ``cache``, so that the validator
    computes the pairs again and reports their mistakes."""
    return dict(_pairs(node, path, issues, (), _PAIRS if cache is None else cache))


def _pairs(
    node: MappingNode, path: KeyPath, issues: Issues, chain: tuple[int, ...], cache: PairsCache
) -> Pairs:
    cached = cache.get(node)
    if cached is not None:
        return cached
    explicit: Pairs = {}
    merged: Pairs = {}
    for key, value in node.value:
        if key.tag == _MERGE:
            for source in _merge_sources(value, path, issues, (*chain, id(node))):
                for name, pair in _pairs(source, path, issues, (*chain, id(node)), cache).items():
                    merged.setdefault(name, pair)  # earlier sources win, as YAML says
            continue
        if not isinstance(key, ScalarNode) or key.tag != _STR:
            issues.add(line_of(key), path, f"keys must be strings (got {describe(key)})")
            continue
        if key.value in explicit:
            first = line_of(explicit[key.value][0])
            issues.add(line_of(key), (*path, key.value), f"duplicate key (first at line {first})")
            continue
        explicit[key.value] = (key, value)
    pairs = merged | explicit
    cache[node] = pairs
    return pairs


def _merge_sources(
    value: Node, path: KeyPath, issues: Issues, chain: tuple[int, ...]
) -> list[MappingNode]:
    items = value.value if isinstance(value, SequenceNode) else [value]
    sources = []
    for item in items:
        if not isinstance(item, MappingNode):
            issues.add(line_of(item), path, f"'<<' merges mappings only (got {describe(item)})")
        elif id(item) in chain:
            issues.add(line_of(item), path, "'<<' merges a mapping into itself")
        elif len(chain) >= MAX_MERGE_DEPTH:
            issues.add(line_of(item), path, f"'<<' merges nested more than {MAX_MERGE_DEPTH} deep")
        else:
            sources.append(item)
    return sources
