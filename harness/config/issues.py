"""Scenario mistakes as values: every one is a ``SchemaIssue``; a file with any raises one
``ScenarioError`` carrying all of them.

- ``SchemaIssue(file, line, key_path, message)``: one mistake, rendered ``file:line: key: message``
  (``line`` is 1-based; 0 means "the whole file", for a file that has no lines to point at: it
  is missing, empty, not a regular file, too big to read; an empty ``key_path`` is left out).
  An issue is always one short line: characters that are not printable are escaped, long values
  cut (``'xxxxx…' (1000000 chars)``), and the message kept under ``MAX_MESSAGE_CHARS``.
- ``ScenarioError(ValueError)``: raised once per load, after every mistake was collected.

Validation code does not raise these: it adds issues to an ``Issues`` list and carries on, so
that a QA engineer fixes a file in one pass instead of one error per run. A file lists at most
``MAX_ISSUES_PER_FILE`` of them, then says how many more there are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.errors import ErrorKind, HarnessError, KeyPath, PathPart, render_path

__all__ = [
    "MAX_ISSUES_PER_FILE",
    "MAX_MESSAGE_CHARS",
    "Issues",
    "KeyPath",
    "PathPart",
    "ScenarioError",
    "SchemaIssue",
    "clip_repr",
    "render_path",
]

#: Longest message of one issue; a longer one (a value shown whole) is cut.
MAX_MESSAGE_CHARS = 400
#: Longest key path shown (a key can be a long string).
MAX_PATH_CHARS = 80
#: Most issues listed for one file (a generated file can have a mistake per line).
MAX_ISSUES_PER_FILE = 100
#: A value is shown with this many characters at most, then an ellipsis and its length.
SHOWN_CHARS = 40

# A quoted value as repr() writes it, long enough to cut; or a long run without spaces.
_LONG_QUOTED = re.compile(r"""'(?:[^'\\]|\\.){60,}'|"(?:[^"\\]|\\.){60,}\"""")
_LONG_WORD = re.compile(r"[^\s'\"]{80,}")


def clip_repr(value: str, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)``, its start only when it is long: ``'xxxx…' (1000000 chars)``. Long is
    counted as shown: a character repr escapes (``\\U0001f0c0``) takes up to 10."""
    shown = repr(value[: limit + 1])
    if len(value) <= limit and len(shown) <= limit + 2:  # + 2: the quotes
        return shown
    kept = value[:limit]
    while len(shown := repr(kept)) > limit + 2:
        kept = kept[:-1]
    return f"{shown[:-1]}…{shown[-1]} ({len(value)} chars)"


def one_line(text: str) -> str:
    """``text`` with every character that is not printable escaped (newlines, tabs, ANSI
    escapes), so an issue is one line and cannot drive a terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line, long values in it cut, and at most about ``limit`` characters."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    text = _LONG_QUOTED.sub(_cut_quoted, text)
    text = _LONG_WORD.sub(lambda m: f"{m[0][:SHOWN_CHARS]}…({len(m[0])} chars)", text)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 24]}… ({len(text)} chars in all)"


def _cut_quoted(match: re.Match[str]) -> str:
    quoted = match[0]
    quote, inner = quoted[0], quoted[1:-1]
    return f"{quote}{inner[:SHOWN_CHARS]}…{quote} ({len(inner)} chars)"


@dataclass(frozen=True, slots=True)
class SchemaIssue:
    """One mistake in a scenario file, with where to look. The text fields are made one short
    line each on construction, whoever builds the issue."""

    file: str
    line: int
    key_path: str
    message: str
    #: a warning (a deprecated form, still read) rather than a mistake
    warning: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "file", one_line(self.file))
        object.__setattr__(self, "key_path", bounded(self.key_path, MAX_PATH_CHARS))
        object.__setattr__(self, "message", bounded(self.message))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        if self.warning:
            where += ": warning"
        return (
            f"{where}: {self.key_path}: {self.message}"
            if self.key_path
            else f"{where}: {self.message}"
        )

    def as_error(self) -> SchemaIssue:
        """This issue as a mistake (``validate --strict`` makes warnings errors)."""
        return SchemaIssue(self.file, self.line, self.key_path, self.message)


class ScenarioError(HarnessError, ValueError):
    """One or more scenario files are invalid; ``issues`` lists every mistake found."""

    code = ErrorKind.SCENARIO

    def __init__(self, issues: Sequence[SchemaIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))

    def within(self, *prefix: PathPart) -> ScenarioError:
        return self  # its issues already say where they are


@dataclass(slots=True)
class Issues:
    """The collector validation writes to (one per file): each issue once, the first
    ``MAX_ISSUES_PER_FILE`` of them kept, the rest counted."""

    file: str
    items: list[SchemaIssue] = field(default_factory=list)
    #: whether what is added here are warnings
    warning: bool = False
    #: issues past the cap: how many, and the line of the first
    dropped: int = 0
    first_dropped: int = 0
    _seen: set[SchemaIssue] = field(default_factory=set)

    def add(self, line: int, path: KeyPath, message: str) -> None:
        issue = SchemaIssue(self.file, line, render_path(path), message, self.warning)
        if issue in self._seen:  # aliases and merges can make one node report twice
            return
        self._seen.add(issue)
        if len(self.items) < MAX_ISSUES_PER_FILE:
            self.items.append(issue)
            return
        self.dropped += 1
        self.first_dropped = self.first_dropped or line

    def listed(self) -> list[SchemaIssue]:
        """The issues top to bottom, then how many more were not kept, if any."""
        ordered = sorted(self.items, key=lambda issue: issue.line)
        if self.dropped:
            more = f"{self.dropped} more issue(s) not listed (at most {MAX_ISSUES_PER_FILE} a file)"
            ordered.append(SchemaIssue(self.file, self.first_dropped, "", more))
        return ordered
