"""Format versions and deprecations: how a file written for an older format is read today.

A file is read in one version of the format (``file_format``): the ``format:`` it names (a
scenario's top-level key; in a list, its first scenario's), else the one of the ``tearline.yaml``
nearest to it (``harness.scenario.settings``), else the current one. The version number changes
only when a form is removed or a key or value changes its meaning; keys that are only added need
none.

A **deprecation** is a form still read, for at least one release, with a warning that names the
file, the line and the new form. Each is one entry of the table in ``harness.scenario.formats``
with a ``find`` that looks at a scenario's nodes (``harness.scenario.views``) and returns a
``Finding`` per place the old form is written, with the ``Rewrite`` that says the same thing in
the current form (``harness.scenario.edits``). The loader makes the rewrite in the nodes before
it validates them, so the file runs as its new form; ``tearline upgrade`` makes it in the text.

``up_to`` says which files an entry rewrites: ``None`` for a form that is simply gone from the
current format (a renamed key: the old spelling is recognised in a file of any version), or the
last version whose files it rewrites, for a key or value whose *meaning* changed in the next
version (a file that names the older version keeps its meaning; one that names none is read
with the new meaning). Removing a deprecated form is the first case becoming the second: a new
version, and ``up_to`` set to the one before it.

One node can be used from many places (an anchor, a merge, a list of scenarios sharing a
``link``); its findings are grouped, and when their rewrites differ the entry's ``fallback``,
right wherever the node is used, is taken instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from yaml.nodes import MappingNode, Node, ScalarNode

from harness.config.issues import Issues, KeyPath
from harness.config.nodes import ScalarError, describe, forget_pairs, line_of, scalar_value
from harness.scenario.edits import Edit
from harness.scenario.views import Lookup, ScenarioView

#: The key that names a version, in a scenario and in ``tearline.yaml``.
FORMAT_KEY = "format"


@dataclass(frozen=True, slots=True)
class FormatVersion:
    """One version of the format: since when it is the current one, and what it changed."""

    number: int
    #: the day it became the current version
    since: str
    summary: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The current form of a deprecated one: the edits, and the new form in words."""

    edits: tuple[Edit, ...]
    #: what to write, for the warning and for ``tearline upgrade``'s report
    #: (```heartbeat: raw` before it``)
    advice: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One place where a deprecated form is written."""

    rule: str
    line: int
    path: KeyPath
    #: the old form as written, in words (``heartbeat_text without heartbeat``)
    old: str
    rewrite: Rewrite
    #: the node every finding of the same written form shares (its key): one rewrite a group
    group: Node
    #: the rewrite that is right wherever ``group`` is used, taken when the uses disagree
    fallback: Rewrite | None = None


class Deprecation(Protocol):
    """An entry of the deprecation table."""

    #: a stable name, in every warning and in the changelog
    @property
    def id(self) -> str: ...

    #: the day the form was deprecated
    @property
    def since(self) -> str: ...

    #: the last format version whose files are rewritten (None: every version)
    @property
    def up_to(self) -> int | None: ...

    #: old form -> new form in one line, for the docs
    @property
    def summary(self) -> str: ...

    def find(self, view: ScenarioView) -> Iterable[Finding]:
        """Every place in this scenario (or faults file) where the old form is written."""
        ...


@dataclass(frozen=True, slots=True)
class FormatRules:
    """The versions this tearline reads and the deprecations it knows (tests bring their own,
    to try a version that does not exist yet)."""

    versions: tuple[FormatVersion, ...]
    deprecations: tuple[Deprecation, ...]

    @property
    def current(self) -> int:
        return self.versions[-1].number

    @property
    def oldest(self) -> int:
        return self.versions[0].number

    def applying(self, version: int) -> list[Deprecation]:
        """The deprecations that rewrite a file of ``version``."""
        return [d for d in self.deprecations if d.up_to is None or version <= d.up_to]

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value`` as a format version, or None."""
        if self.oldest == self.current:
            known = f"this tearline reads format {self.current}"
        else:
            known = f"this tearline reads formats {self.oldest} to {self.current}"
        if not isinstance(value, int) or isinstance(value, bool):
            return f"expected a format version, an integer ({known})"
        if value > self.current:
            return f"format {value} is newer than this tearline ({known}): upgrade tearline"
        if value < self.oldest:
            return f"format {value} is no longer read ({known})"
        return None

    def read(self, node: Node) -> tuple[int | None, str | None]:
        """The version a ``format:`` value names, or why it names none."""
        if not isinstance(node, ScalarNode):
            return None, f"{self.problem(None)} (got {describe(node)})"
        try:
            value = scalar_value(node)
        except ScalarError as err:
            return None, str(err)
        problem = self.problem(value)
        if problem is not None and (not isinstance(value, int) or isinstance(value, bool)):
            problem += f" (got {describe(node)})"
        return (value if problem is None else None), problem  # type: ignore[return-value]


def file_format(
    nodes: Sequence[MappingNode],
    default: int,
    rules: FormatRules,
    issues: Issues,
    lookup: Lookup | None = None,
) -> int | None:
    """The version a file of these scenario nodes is read in: the ``format`` of its first
    scenario, else ``default`` (its ``tearline.yaml``'s, or the current one). A later
    scenario may repeat the first one's format, not name another. None, with the issue, when
    a ``format`` is wrong: then the file is not read at all (guessing could change what it
    means)."""
    version: int | None = None
    first_line = 0
    ok = True
    pairs = (lookup or Lookup()).pairs
    for node in nodes:
        pair = pairs(node).get(FORMAT_KEY)
        if pair is None:
            continue
        value, problem = rules.read(pair[1])
        if problem is not None:
            issues.add(line_of(pair[1]), (FORMAT_KEY,), problem)
            ok = False
        elif version is None:
            version, first_line = value, line_of(pair[1])
        elif value != version:
            message = f"format {value}, but this file says format {version} (line {first_line})"
            issues.add(line_of(pair[1]), (FORMAT_KEY,), message + ": one file, one format")
            ok = False
    if not ok:
        return None
    return default if version is None else version


@dataclass(frozen=True, slots=True)
class Resolved:
    """A finding and the rewrite chosen for it (None: its uses need different rewrites and
    the entry has no fallback; the form is then left as written, for the validator)."""

    finding: Finding
    rewrite: Rewrite | None

    @property
    def message(self) -> str:
        """The warning: what is deprecated, and what to write instead."""
        head = f"deprecated ({self.finding.rule}): {self.finding.old}"
        if self.rewrite is None:
            return f"{head}; it is used where it would need different new forms: rewrite it by hand"
        return f"{head}; write {self.rewrite.advice} (`tearline upgrade` rewrites the file)"


def find_deprecated(views: Sequence[ScenarioView], rules: Iterable[Deprecation]) -> list[Resolved]:
    """Every deprecated form written in these scenarios (of one file), each with its rewrite:
    one per group of findings that share a written node."""
    findings = [f for rule in rules for view in views for f in rule.find(view)]
    groups: dict[int, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(id(finding.group), []).append(finding)
    resolved = []
    for group in groups.values():
        rewrites = {finding.rewrite for finding in group}
        chosen = group[0].rewrite if len(rewrites) == 1 else group[0].fallback
        resolved += [Resolved(finding, chosen) for finding in group]
    return resolved


def edits_of(resolved: Iterable[Resolved]) -> list[Edit]:
    """The edits of these rewrites, each once, in order."""
    edits: dict[Edit, None] = {}
    for item in resolved:
        for edit in item.rewrite.edits if item.rewrite is not None else ():
            edits.setdefault(edit)
    return list(edits)


def apply_to_nodes(edits: Iterable[Edit]) -> bool:
    """Make the edits in the composed nodes; False if one found nothing to change (two edits
    of the same node). Cached key lookups are forgotten: the nodes changed under them."""
    edits = list(edits)
    done = all([edit.apply() for edit in edits])
    if edits:
        forget_pairs()
    return done
