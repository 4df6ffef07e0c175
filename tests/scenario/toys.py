"""Toy faults and helpers for the scenario tests.

The loader takes its fault registry as a parameter; these toys exercise every field type a
fault may use (int, float, str, bool, Literal, ``X | None``, ``tuple[int, ...]``,
``tuple[str, ...]``, ``Position``) and both ways a fault complains (``"field: ..."`` and a
nested ``"at.frame: ..."``), independently of the real faults.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar, Literal

from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.position import Position
from harness.scenario import Scenario, ScenarioError, SchemaIssue, load_text


@dataclass(frozen=True, slots=True, kw_only=True)
class ToyKill(BaseFault):
    """Cut the connection at ``at``."""

    kind: ClassVar[str] = "kill"
    at: Position
    how: Literal["rst", "fin", "half"] = "rst"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToyLatency(BaseFault):
    """Delay every chunk."""

    kind: ClassVar[str] = "latency"
    #: added delay, in milliseconds
    delay_ms: float
    jitter_ms: float = 0.0

    def _validate(self) -> None:
        if self.delay_ms < 0:
            raise FieldError(f"must be >= 0 (got {self.delay_ms:g})", path=("delay_ms",))
        if self.jitter_ms > self.delay_ms:
            raise ValueError("jitter may not exceed the delay")  # no field named: whole fault


@dataclass(frozen=True, slots=True, kw_only=True)
class ToyCorrupt(BaseFault):
    """Rewrite bytes at ``at``."""

    kind: ClassVar[str] = "corrupt"
    at: Position
    count_bytes: int = 1
    value: int | None = None
    frames: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    flip: bool = False
    label: str = ""

    def _validate(self) -> None:
        if self.at.frame is not None and self.at.frame > 100:
            raise FieldError(f"at most 100 here (got {self.at.frame})", path=("at", "frame"))


@dataclass(frozen=True, slots=True)
class FixedShape:
    """A stream of ``stream_length`` bytes whose frames are all ``frame_bytes`` long (what
    ``expand`` measures ``to: end`` with; the runner's is the prepared link)."""

    stream_length: int
    frame_bytes: int = 0
    asked: list[int] | None = None

    def frame_length(self, index: int) -> int:
        if self.asked is not None:
            self.asked.append(index)
        return self.frame_bytes


REGISTRY: dict[str, type] = {"kill": ToyKill, "latency": ToyLatency, "corrupt": ToyCorrupt}


def load(text: str, file: str = "scenarios/x.yaml") -> list[Scenario]:
    """The scenarios of dedented ``text``, with the toy registry."""
    return load_text(textwrap.dedent(text), file, faults=REGISTRY)


def issues(text: str, file: str = "scenarios/x.yaml") -> list[tuple[int, str, str]]:
    """``(line, key path, message)`` of every issue in dedented ``text``."""
    try:
        load(text, file)
    except ScenarioError as err:
        return [(issue.line, issue.key_path, issue.message) for issue in err.issues]
    raise AssertionError("the text loaded without issues")


def where(text: str) -> list[tuple[int, str]]:
    """``(line, key path)`` of every issue in dedented ``text``."""
    return [(line, path) for line, path, _ in issues(text)]


MINIMAL = """\
name: minimal
description: The smallest valid scenario.
link: {framing: ndjson, payload: messages}
expect: {verdict: MESSAGE_COMPLETE}
"""


#: Longest rendered issue the fuzz tests accept (file name included; theirs are short): a
#: message is kept under 400 characters (``errors.MAX_MESSAGE_CHARS``), and the longest real
#: one is an unknown fault kind, shown cut, followed by the 15 kinds expected (343).
MAX_ISSUE_CHARS = 400
#: How messages at line 0 begin: the file has no line to point at, and they say why.
WHOLE_FILE_REASONS = (
    "empty file",
    "no such file",
    "a dangling symbolic link",
    "a directory",
    "a named pipe",
    "a character device",
    "a block device",
    "a socket",
    "not a regular file",
    "cannot read",
    "cannot list",
    "no .yaml or .yml files",
)


def malformed(found: list[SchemaIssue], file: str, lines: int) -> list[str]:
    """What is wrong with the issues of a file of ``lines`` lines: each must name the file,
    point at a line that exists (or at 0 with a reason), be one line and short."""
    problems = []
    for issue in found:
        text = str(issue)
        if issue.file != file:
            problems.append(f"names another file: {text}")
        if issue.line == 0 and not issue.message.startswith(WHOLE_FILE_REASONS):
            problems.append(f"line 0 without a reason: {text}")
        if not 0 <= issue.line <= lines + 1:  # +1: an error at the end of the last line
            problems.append(f"line {issue.line} of {lines}: {text}")
        if len(text) > MAX_ISSUE_CHARS or not text.isprintable():
            problems.append(f"not one short line ({len(text)} chars): {text[:400]!r}")
    return problems
