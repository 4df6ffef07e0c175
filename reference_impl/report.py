"""The consumer report: what a consumer accepted and which verdict it reached.

This is also the contract for users' own consumer programs (``docs/consumer-contract.md``): a
consumer writes one JSON object of this shape, and the judge reads nothing else from it.
``to_json``/``from_json`` are the only (de)serialisers, so the document and the code cannot drift.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

REPORT_VERSION = 1
#: bounds a report is held to once read (``bounded``): the judge and every report file see at
#: most this much, and say so when a report had more
MAX_DETAIL_CHARS = 2000
MAX_ACCEPTED = 100_000
MAX_CONNECTIONS = 1000
#: the largest report line tearline reads from a consumer program
MAX_REPORT_BYTES = 16 << 20


PREVIEW_CHARS = 40


def preview(data: bytes) -> str:
    """The first bytes of a message, for people: text when it is UTF-8, else hex."""
    head = data[:PREVIEW_CHARS]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = head.hex(" ")
    return text + ("\u2026" if len(data) > len(head) else "")


@dataclass(frozen=True, slots=True)
class Accepted:
    """One message the consumer handed on: its SHA-256 (hex), size, connection (1-based), and
    optionally its first bytes for diagnoses (``preview``)."""

    sha256: str
    size: int
    connection: int = 1
    preview: str | None = None

    @classmethod
    def of(cls, data: bytes, connection: int = 1) -> Accepted:
        return cls(hashlib.sha256(data).hexdigest(), len(data), connection, preview(data))


class Tally:
    """How many messages, and a running SHA-256 over their digests in order: what a long
    stream needs where nobody judges the list (memory O(1), seed 001's bound), and enough to
    say that two sides saw the same messages."""

    __slots__ = ("_chain", "count")

    def __init__(self) -> None:
        self.count = 0
        self._chain = hashlib.sha256()

    def add(self, digest_hex: str) -> None:
        self.count += 1
        self._chain.update(bytes.fromhex(digest_hex))

    @property
    def digest(self) -> str:
        return self._chain.hexdigest()

    @classmethod
    def of(cls, digests: Iterable[str]) -> Tally:
        tally = cls()
        for digest in digests:
            tally.add(digest)
        return tally


@dataclass(frozen=True, slots=True)
class Recorded:
    """The recorded elements of seeds 000 and 002, as they stood when the consumer decided."""

    message_boundary_delimiter: str | None = None
    partial_buffer_state_hash: str | None = None
    expected_message_size: int | None = None
    incomplete_message_timeout: float | None = None
    stream_completion_signal_receipt: str | None = None
    expected_stream_length_hint: int | None = None
    partial_stream_hash: str | None = None
    stream_recovery_predicate: str | None = None


@dataclass(frozen=True, slots=True)
class ConnectionSummary:
    """How one connection of the consumer ended, and the framing verdict it left."""

    end: str  # "stream-end" | "eof" | "rst" | "timeout" | "error" | "paused-stale"
    framing_verdict: str
    error_code: str | None
    reads: int
    bytes_received: int


@dataclass(frozen=True, slots=True)
class ConsumerReport:
    verdict: str
    complete: bool
    error_code: str | None = None
    framing_verdict: str | None = None
    accepted: tuple[Accepted, ...] = ()
    connections: tuple[ConnectionSummary, ...] = ()
    reads: int = 0
    recorded: Recorded = field(default_factory=Recorded)
    manifest_digest: str | None = None
    directive: str | None = None
    detail: str = ""
    version: int = REPORT_VERSION
    #: set when ``accepted`` was left out on purpose (a long stream consumed on its own,
    #: ``ConsumerConfig.list_accepted``): how many messages were handed on
    accepted_count: int | None = None


def bounded(report: ConsumerReport) -> tuple[ConsumerReport, tuple[str, ...]]:
    """``report`` held to the bounds above, and a note for each part that was cut."""
    notes: list[str] = []
    detail, accepted, connections = report.detail, report.accepted, report.connections
    if len(detail) > MAX_DETAIL_CHARS:
        notes.append(f"detail cut to {MAX_DETAIL_CHARS} of {len(detail)} characters")
        detail = detail[:MAX_DETAIL_CHARS] + "\u2026"
    if len(accepted) > MAX_ACCEPTED:
        notes.append(f"judged on the first {MAX_ACCEPTED} of {len(accepted)} accepted messages")
        accepted = accepted[:MAX_ACCEPTED]
    if len(connections) > MAX_CONNECTIONS:
        notes.append(f"kept the first {MAX_CONNECTIONS} of {len(connections)} connections")
        connections = connections[:MAX_CONNECTIONS]
    if not notes:
        return report, ()
    return replace(report, detail=detail, accepted=accepted, connections=connections), tuple(notes)


def to_json(report: ConsumerReport) -> str:
    return json.dumps(asdict(report), sort_keys=True)


class ReportFormatError(ValueError):
    """A consumer printed something that is not a valid report."""


def _build(cls: Any, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ReportFormatError(f"{where}: expected an object")
    names = {f for f in cls.__dataclass_fields__}
    unknown = set(raw) - names
    if unknown:
        raise ReportFormatError(f"{where}: unknown keys {sorted(unknown)}")
    try:
        return cls(**raw)
    except TypeError as err:
        raise ReportFormatError(f"{where}: {err}") from None


def from_json(text: str) -> ConsumerReport:
    """Parse a report; ``ReportFormatError`` names the first problem."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportFormatError(f"not JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ReportFormatError("report: expected an object")
    raw = dict(raw)
    raw["accepted"] = tuple(
        _build(Accepted, a, f"accepted[{i}]") for i, a in enumerate(raw.get("accepted", []))
    )
    raw["connections"] = tuple(
        _build(ConnectionSummary, c, f"connections[{i}]")
        for i, c in enumerate(raw.get("connections", []))
    )
    raw["recorded"] = _build(Recorded, raw.get("recorded", {}), "recorded")
    report: ConsumerReport = _build(ConsumerReport, raw, "report")
    if not isinstance(report.verdict, str) or not isinstance(report.complete, bool):
        raise ReportFormatError("report: 'verdict' must be a string and 'complete' a boolean")
    return report
