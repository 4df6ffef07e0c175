"""Value constraints attached to field types with ``typing.Annotated``.

``count: Annotated[int, Ge(0)] = 5`` says once what both the loader checks and the JSON Schema
publishes (``minimum: 0``). Constraints sit on the type, not the field, so
``tuple[Annotated[str, OneOf(...)], ...]`` constrains every item. Rules that involve several
fields stay in the dataclass's ``__post_init__``.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Constraint(Protocol):
    def check(self, value: Any) -> str | None:
        """The complaint about ``value``, or None when it passes."""
        ...

    def schema(self, json_type: str) -> dict[str, Any]:
        """The JSON Schema keywords saying the same, for a value of ``json_type``."""
        ...


def _number(value: float) -> str:
    """``5`` for 5 and 5.0 (YAML said 5), ``0.5`` for 0.5."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


@dataclass(frozen=True, slots=True)
class Ge:
    """At least ``bound``."""

    bound: float

    def check(self, value: Any) -> str | None:
        return (
            None
            if value >= self.bound
            else f"must be >= {_number(self.bound)} (got {_number(value)})"
        )

    def schema(self, json_type: str) -> dict[str, Any]:
        return {"minimum": self.bound}


@dataclass(frozen=True, slots=True)
class Gt:
    """More than ``bound``."""

    bound: float

    def check(self, value: Any) -> str | None:
        return (
            None
            if value > self.bound
            else f"must be > {_number(self.bound)} (got {_number(value)})"
        )

    def schema(self, json_type: str) -> dict[str, Any]:
        return {"exclusiveMinimum": self.bound}


@dataclass(frozen=True, slots=True)
class Le:
    """At most ``bound``."""

    bound: float

    def check(self, value: Any) -> str | None:
        return (
            None
            if value <= self.bound
            else f"must be <= {_number(self.bound)} (got {_number(value)})"
        )

    def schema(self, json_type: str) -> dict[str, Any]:
        return {"maximum": self.bound}


@dataclass(frozen=True, slots=True)
class MinLen:
    """A string or list of at least ``size`` items."""

    size: int

    def check(self, value: Any) -> str | None:
        if len(value) >= self.size:
            return None
        return "must not be empty" if self.size == 1 else f"needs at least {self.size} items"

    def schema(self, json_type: str) -> dict[str, Any]:
        return {"minLength" if json_type == "string" else "minItems": self.size}


@dataclass(frozen=True, slots=True)
class MaxLen:
    """A string or list of at most ``size`` items (characters)."""

    size: int

    def check(self, value: Any) -> str | None:
        if len(value) <= self.size:
            return None
        unit = "characters" if isinstance(value, str) else "items"
        return f"at most {self.size} {unit} (got {len(value)})"

    def schema(self, json_type: str) -> dict[str, Any]:
        return {"maxLength" if json_type == "string" else "maxItems": self.size}


@dataclass(frozen=True, slots=True)
class Pattern:
    """A string matching ``regex`` as a whole; ``hint`` says in words what that means."""

    regex: str
    hint: str

    def check(self, value: Any) -> str | None:
        return None if re.fullmatch(self.regex, value) else f"{self.hint} (got {value!r})"

    def schema(self, json_type: str) -> dict[str, Any]:
        # JSON Schema patterns search; anchor them to match like re.fullmatch.
        return {"pattern": f"^(?:{self.regex})$"}


@dataclass(frozen=True, slots=True)
class OneOf:
    """One of a vocabulary too large or too dynamic for a ``Literal`` (verdicts, error codes)."""

    values: tuple[str, ...]
    what: str = "value"

    def check(self, value: Any) -> str | None:
        if value in self.values:
            return None
        return f"unknown {self.what} {value!r}{suggest(value, self.values)}"

    def schema(self, json_type: str) -> dict[str, Any]:
        return {"enum": list(self.values)}


def suggest(word: str, choices: Sequence[str], *, list_all_up_to: int = 8) -> str:
    """``"; did you mean 'x'?"`` (close matches), else the whole list when it is short."""
    folded = {choice.lower(): choice for choice in choices}  # 'RST' is close to 'rst'
    close = difflib.get_close_matches(word.lower(), list(folded), n=3, cutoff=0.6)
    if close:
        return "; did you mean " + " or ".join(repr(folded[c]) for c in close) + "?"
    if len(choices) <= list_all_up_to:
        return "; expected one of " + ", ".join(repr(c) for c in choices)
    return ""


def finite(value: float) -> str | None:
    """YAML has ``.inf`` and ``.nan``; no duration or size of ours means either."""
    return None if math.isfinite(value) else f"must be a finite number (got {value!r})"
