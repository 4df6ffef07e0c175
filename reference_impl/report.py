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

from reference_impl.ledger import WINDOW

REPORT_VERSION = 1
#: bounds a report is held to once read (``bounded``): the judge and every report file see at
#: most this much, and say so when a report had more
MAX_DETAIL_CHARS = 2000
#: accepted messages listed per connection; past them a count and a running hash
#: (``ledger.py``), so that the judge is exact at any length
MAX_ACCEPTED = WINDOW
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
class AcceptedPast:
    """The messages one connection handed on past the first ``MAX_ACCEPTED``: how many, and
    a running SHA-256 over their digests in order (``Tally``)."""

    connection: int
    count: int
    chain: str


class AcceptedLog:
    """The accepted messages as they are handed on, in bounded memory: each connection's
    first ``MAX_ACCEPTED`` listed, the rest tallied (``AcceptedPast``)."""

    __slots__ = ("_listed", "_past", "listed")

    def __init__(self) -> None:
        self.listed: list[Accepted] = []
        self._listed: dict[int, int] = {}
        self._past: dict[int, Tally] = {}

    def add(self, accepted: Accepted) -> None:
        number = accepted.connection
        if self._listed.get(number, 0) < MAX_ACCEPTED:
            self._listed[number] = self._listed.get(number, 0) + 1
            self.listed.append(accepted)
        else:
            self._past.setdefault(number, Tally()).add(accepted.sha256)

    def clear(self) -> None:
        self.listed.clear()
        self._listed.clear()
        self._past.clear()

    def __len__(self) -> int:
        return len(self.listed) + sum(t.count for t in self._past.values())

    @property
    def past(self) -> tuple[AcceptedPast, ...]:
        return tuple(AcceptedPast(n, t.count, t.digest) for n, t in sorted(self._past.items()))


def accepted_total(report: ConsumerReport) -> int:
    """How many messages the consumer handed on, listed or tallied."""
    if report.accepted_count is not None:
        return report.accepted_count
    return len(report.accepted) + sum(p.count for p in report.accepted_past)


def accepted_past(report: ConsumerReport, connection: int) -> AcceptedPast | None:
    return next((p for p in report.accepted_past if p.connection == connection), None)


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
    #: each connection's accepted messages past the first ``MAX_ACCEPTED`` (a count and a
    #: running hash: ``AcceptedPast``)
    accepted_past: tuple[AcceptedPast, ...] = ()


def bounded(report: ConsumerReport) -> tuple[ConsumerReport, tuple[str, ...]]:
    """``report`` held to the bounds above, and a note for each part that was cut."""
    notes: list[str] = []
    detail, accepted, connections = report.detail, report.accepted, report.connections
    if len(detail) > MAX_DETAIL_CHARS:
        notes.append(f"detail cut to {MAX_DETAIL_CHARS} of {len(detail)} characters")
        detail = detail[:MAX_DETAIL_CHARS] + "\u2026"
    past = report.accepted_past
    if _overlisted(accepted):
        log = AcceptedLog()
        for message in accepted:
            log.add(message)
        if past:
            notes.append(
                "accepted_past ignored: a report that tallies lists MAX_ACCEPTED a connection"
            )
        accepted, past = tuple(log.listed), log.past
    if len(connections) > MAX_CONNECTIONS:
        notes.append(f"kept the first {MAX_CONNECTIONS} of {len(connections)} connections")
        connections = connections[:MAX_CONNECTIONS]
    if not notes and accepted is report.accepted:
        return report, ()
    cut = replace(
        report, detail=detail, accepted=accepted, connections=connections, accepted_past=past
    )
    return cut, tuple(notes)


def _overlisted(accepted: tuple[Accepted, ...]) -> bool:
    """More than ``MAX_ACCEPTED`` messages of one connection listed."""
    if len(accepted) <= MAX_ACCEPTED:
        return False
    counts: dict[int, int] = {}
    for message in accepted:
        counts[message.connection] = counts.get(message.connection, 0) + 1
    return max(counts.values()) > MAX_ACCEPTED


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
    raw["accepted_past"] = tuple(
        _build(AcceptedPast, p, f"accepted_past[{i}]")
        for i, p in enumerate(raw.get("accepted_past", []))
    )
    raw["recorded"] = _build(Recorded, raw.get("recorded", {}), "recorded")
    report: ConsumerReport = _build(ConsumerReport, raw, "report")
    if not isinstance(report.verdict, str) or not isinstance(report.complete, bool):
        raise ReportFormatError("report: 'verdict' must be a string and 'complete' a boolean")
    return report
