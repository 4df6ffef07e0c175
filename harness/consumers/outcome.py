"""How one call of a consumer function ended (pure): the worker's answer to the runner.

The worker hashes each message as it is handed on, so only digests cross the process boundary
(a 16 MiB message costs its digest and a 40-character preview). ``to_wire``/``from_wire`` are
the only (de)serialisers of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reference_impl.report import MAX_DETAIL_CHARS, Accepted, AcceptedPast


class Ending(StrEnum):
    """How the function ended."""

    RETURNED = "returned"  # a normal end: the application saw the stream end
    RAISED = "raised"  # an exception: the client surfaced a failure
    #: TypeError, AttributeError, NameError ...: a bug in the function (or the client it
    #: calls), not a failure of the stream
    PROGRAMMING_ERROR = "programming-error"
    #: it returned or yielded something that is not a message
    BAD_RETURN = "bad-return"
    #: SystemExit, KeyboardInterrupt, GeneratorExit: nothing a client surfaces for a stream
    ESCAPED = "escaped"


@dataclass(frozen=True, slots=True)
class CallOutcome:
    ending: Ending
    #: the messages handed on before the end, in order (each connection's first
    #: ``MAX_ACCEPTED``; the rest as a count and a running hash)
    accepted: tuple[Accepted, ...] = ()
    #: the exception's class name and module (RAISED, PROGRAMMING_ERROR, ESCAPED)
    error_type: str = ""
    error_module: str = ""
    #: ``str(exception)``, or what was wrong with the return value (BAD_RETURN)
    text: str = ""
    #: where the exception was raised: ``file:line in function`` of the innermost frame
    where: str = ""
    #: from the moment the function was called to its end, measured in the worker
    duration_s: float = 0.0
    accepted_past: tuple[AcceptedPast, ...] = ()


def bounded_text(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "\u2026"


def to_wire(outcome: CallOutcome) -> dict[str, Any]:
    return {
        "ending": outcome.ending.value,
        "accepted": [[a.sha256, a.size, a.connection, a.preview] for a in outcome.accepted],
        "error_type": outcome.error_type,
        "error_module": outcome.error_module,
        "text": outcome.text,
        "where": outcome.where,
        "duration_s": outcome.duration_s,
        "accepted_past": [[p.connection, p.count, p.chain] for p in outcome.accepted_past],
    }


def from_wire(raw: dict[str, Any]) -> CallOutcome:
    """The outcome a worker sent; ``ValueError``/``KeyError``/``TypeError`` if malformed."""
    accepted = tuple(
        Accepted(str(sha), int(size), int(connection), None if seen is None else str(seen))
        for sha, size, connection, seen in raw["accepted"]
    )
    return CallOutcome(
        ending=Ending(raw["ending"]),
        accepted=accepted,
        error_type=str(raw["error_type"]),
        error_module=str(raw["error_module"]),
        text=str(raw["text"]),
        where=str(raw["where"]),
        duration_s=float(raw["duration_s"]),
        accepted_past=tuple(
            AcceptedPast(int(n), int(count), str(chain)) for n, count, chain in raw["accepted_past"]
        ),
    )
