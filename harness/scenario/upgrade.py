"""``tearline upgrade``'s core: the text of a scenario file (or a ``--faults`` file) in, the
same file in the current format out, and what changed.

Every deprecated form the loader would warn about is rewritten as the loader reads it
(``harness.scenario.versions``), in the text itself (``harness.scenario.edits``): the rest of
the file, comments, anchors, key order and layout, stays byte for byte. A file that names an
older format is then said to be in the current one (its ``format:``, or, when its folder's
``tearline.yaml`` named the older one, a ``format:`` of its own at the top).

Before anything is returned, the new text is read back: it must hold exactly what the loader
reads from the old one, and no deprecated form. If it does not, or an edit cannot be made in
place (a value that is an anchor other keys alias), the text is left as it was and the problem
says what to change by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import Issues, KeyPath, SchemaIssue
from harness.config.nodes import line_of, parse
from harness.scenario.edits import Edit, Insert, Replace, Splice, apply_splices, to_data
from harness.scenario.formats import FORMAT_RULES
from harness.scenario.versions import (
    FORMAT_KEY,
    FormatRules,
    Resolved,
    apply_to_nodes,
    edits_of,
    file_format,
    find_deprecated,
)
from harness.scenario.views import Lookup, ScenarioView


@dataclass(frozen=True, slots=True)
class Change:
    """One thing the upgrade changed, where it was in the old text."""

    line: int
    path: KeyPath
    text: str


@dataclass(frozen=True, slots=True)
class Upgraded:
    """The new text (the old one when nothing changed or something went wrong), what changed,
    and what kept it from changing."""

    text: str
    changes: tuple[Change, ...]
    problems: tuple[SchemaIssue, ...]

    @property
    def changed(self) -> bool:
        return bool(self.changes) and not self.problems


def upgrade_text(
    text: str, file: str, *, default_format: int | None = None, formats: FormatRules | None = None
) -> Upgraded:
    """``text`` in the current format (see the module). ``default_format`` is the version its
    folder's ``tearline.yaml`` names."""
    rules = formats if formats is not None else FORMAT_RULES
    issues = Issues(file)
    root = parse(text, issues)
    nodes = _mappings(root)
    lookup = Lookup()
    version = file_format(
        nodes, rules.current if default_format is None else default_format, rules, issues, lookup
    )
    if root is None or version is None:
        return Upgraded(text, (), tuple(issues.listed()))
    views = [ScenarioView(node, lookup) for node in nodes]
    found = find_deprecated(views, rules.applying(version))
    stamp = _stamp(nodes, version, rules.current, default_format is not None)
    newline = "\r\n" if "\r\n" in text else "\n"
    found = [_in_place(item, text, newline) for item in found]
    splices = _splices(found, stamp, text, newline, issues)
    new_text = apply_splices(text, splices)
    if new_text is None:
        issues.add(found[0].finding.line if found else 1, (), "deprecated forms overlap here")
    if issues.items or new_text is None:
        return Upgraded(text, (), tuple(issues.listed()))
    changes = _changes(found, stamp, version, rules.current)
    if not changes:
        return Upgraded(text, (), ())
    apply_to_nodes([*edits_of(found), *(edit for edit, _ in stamp)])
    problem = _read_back(root, new_text, rules)
    if problem is not None:
        issues.add(1, (), problem)
        return Upgraded(text, (), tuple(issues.listed()))
    return Upgraded(new_text, changes, ())


def is_faults_file(text: str) -> bool:
    """Whether ``text`` is a ``tearline proxy --faults`` file (a mapping of ``faults`` and no
    scenario's ``name``) rather than a scenario file."""
    root = parse(text, Issues(""))
    keys = Lookup().pairs(root)
    return isinstance(root, MappingNode) and "faults" in keys and "name" not in keys


def _mappings(root: Node | None) -> list[MappingNode]:
    """The scenario mappings of a file (or its one mapping: a faults file)."""
    if isinstance(root, MappingNode):
        return [root]
    if isinstance(root, SequenceNode):
        return [item for item in root.value if isinstance(item, MappingNode)]
    return []


def _stamp(
    nodes: Sequence[MappingNode], version: int, current: int, from_settings: bool
) -> list[tuple[Edit, int]]:
    """The edits that say the file is in the current format, each with its line: a ``format``
    it names is set to the current version; one its folder named is written at its top."""
    if version == current or not nodes:
        return []
    named = [
        (node, key, value)
        for node in nodes
        for key, value in node.value
        if isinstance(key, ScalarNode) and key.value == FORMAT_KEY and isinstance(value, ScalarNode)
    ]
    if named:
        return [(Replace(node, value, current), line_of(value)) for node, _, value in named]
    if not from_settings or not nodes[0].value:
        return []
    first = nodes[0].value[0][0]
    return [(Insert(nodes[0], first, FORMAT_KEY, current), line_of(first))]


def _in_place(item: Resolved, text: str, newline: str) -> Resolved:
    """``item``, with its fallback rewrite when its own cannot be made in place (a value that
    is an anchor: the fallback, right wherever the node is used, leaves the value alone)."""
    rewrite, fallback = item.rewrite, item.finding.fallback
    if rewrite is None or fallback is None or rewrite == fallback:
        return item
    if all(edit.splices(text, newline) is not None for edit in rewrite.edits):
        return item
    return Resolved(item.finding, fallback)


def _splices(
    found: list[Resolved], stamp: list[tuple[Edit, int]], text: str, newline: str, issues: Issues
) -> list[Splice]:
    splices: list[Splice] = []
    seen: set[Edit] = set()
    for item in found:
        finding, rewrite = item.finding, item.rewrite
        if rewrite is None:
            issues.add(finding.line, finding.path, item.message)
            continue
        for edit in rewrite.edits:
            if edit in seen:  # the same edit, for another use of the same node
                continue
            seen.add(edit)
            made = edit.splices(text, newline)
            if made is None:
                message = (
                    "cannot rewrite in place (an anchor that other keys alias): "
                    f"write {rewrite.advice} by hand"
                )
                issues.add(finding.line, finding.path, message)
            else:
                splices += made
    for edit, line in stamp:
        made = edit.splices(text, newline)
        if made is None:
            issues.add(line, (FORMAT_KEY,), "cannot set the format in place: set it by hand")
        else:
            splices += made
    return splices


def _changes(
    found: list[Resolved], stamp: list[tuple[Edit, int]], version: int, current: int
) -> tuple[Change, ...]:
    changes: dict[tuple[int, str], Change] = {}
    for item in found:
        finding = item.finding
        assert item.rewrite is not None  # (else a problem was reported)
        text = f"{finding.old}: wrote {item.rewrite.advice}"
        changes.setdefault((finding.line, text), Change(finding.line, finding.path, text))
    for _, line in stamp:
        text = f"format {version} -> format {current}"
        changes.setdefault((line, text), Change(line, (FORMAT_KEY,), text))
    return tuple(sorted(changes.values(), key=lambda change: change.line))


def _read_back(edited: Node, new_text: str, rules: FormatRules) -> str | None:
    """Why ``new_text`` is not what the edited nodes hold, with no deprecated form left; None
    when it is."""
    issues = Issues("")
    root = parse(new_text, issues)
    if root is None or issues.items:
        return "the rewritten text does not parse; the file is left as it was"
    if to_data(root) != to_data(edited):
        return "the rewritten text would not read as the old one does; the file is left as it was"
    nodes = _mappings(root)
    version = file_format(nodes, rules.current, rules, issues)
    if version is None or find_deprecated(
        [ScenarioView(n) for n in nodes], rules.applying(version)
    ):
        return "the rewritten text still has a deprecated form; the file is left as it was"
    return None
