"""The harness's errors: one tree, each error carrying a code and where it applies as fields.

Nothing is parsed back out of a message: code decides by ``code`` and ``path``, and the text is
made once, at the edge (``tearline``'s ``file:line: key.path: message``, a case's diagnosis).

- ``HarnessError``: the root; ``code`` (an ``ErrorKind``), ``path`` (a key path such as
  ``("faults", 0, "at", "frame")``, relative to the object that raised it) and ``message``.
- ``FieldError`` (also a ``ValueError``): a configuration value or combination breaks a rule.
  Raised by the scenario model and fault configs; whoever holds the object adds its own key in
  front (``within``), so a fault's ``("at", "frame")`` becomes ``("faults", 0, "at", "frame")``.
- ``PositionError``: a position that this stream does not have (frame 9 of 5, no such match).
- ``SetupError``: the harness could not set a case up (an upstream that does not answer, a
  consumer program that cannot start, a TLS handshake that failed).
- ``SelectionError``: a ``-k`` expression that does not parse.

Scenario files gather their mistakes in ``harness.config.issues.ScenarioError``, a
``HarnessError`` holding every issue with its file and line.
"""

from __future__ import annotations

from enum import StrEnum

#: One step of a key path: a mapping key or a list index.
PathPart = str | int
KeyPath = tuple[PathPart, ...]


class ErrorKind(StrEnum):
    FIELD = "field"
    POSITION = "position"
    SETUP = "setup"
    REFUSED = "refused"
    SELECTION = "selection"
    SCENARIO = "scenario"


def render_path(path: KeyPath) -> str:
    """``("faults", 1, "delay_ms")`` -> ``"faults[1].delay_ms"``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


class HarnessError(Exception):
    """Base of every harness error: a code, a key path and a message, kept apart."""

    code: ErrorKind = ErrorKind.FIELD

    def __init__(self, message: str, *, path: KeyPath = ()) -> None:
        self.message = message
        self.path = path
        super().__init__(self.text)

    @property
    def text(self) -> str:
        """``key.path: message`` (just the message when there is no path)."""
        where = render_path(self.path)
        return f"{where}: {self.message}" if where else self.message

    def within(self, *prefix: PathPart) -> HarnessError:
        """The same error, seen from the object that holds this one at ``prefix``."""
        return type(self)(self.message, path=(*prefix, *self.path))

    def __str__(self) -> str:
        return self.text


class FieldError(HarnessError, ValueError):
    """A configuration value, or a combination of values, that breaks a rule."""

    code = ErrorKind.FIELD


class PositionError(HarnessError):
    """A position that does not exist in this stream."""

    code = ErrorKind.POSITION


class RefusedError(HarnessError):
    """What a service sent cannot be what was meant to be recorded or run: it answered the
    request with an error status, or does not speak the declared framing."""

    code = ErrorKind.REFUSED


class SetupError(HarnessError):
    """The harness could not set the case up; nothing can be said about the consumer."""

    code = ErrorKind.SETUP


class SelectionError(HarnessError, ValueError):
    """A ``-k`` expression that does not parse."""

    code = ErrorKind.SELECTION


def harness_error_in(err: BaseException) -> HarnessError | None:
    """The first ``HarnessError`` in ``err`` or, when it is an exception group (trio wraps
    what a nursery raises), among its leaves; None when there is none."""
    if isinstance(err, HarnessError):
        return err
    if isinstance(err, BaseExceptionGroup):
        for inner in err.exceptions:
            if (found := harness_error_in(inner)) is not None:
                return found
    return None
