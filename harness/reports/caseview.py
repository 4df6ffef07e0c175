"""What the page shows of one case, as plain text, and how it groups cases by scenario.

Shared by the two places a case is shown: in full on the page (``html``, the failing cases)
and in the detail files the page loads on demand (``details``), so both say the same thing.
Pure: results in, strings out (escaping is the renderer's job).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from harness.evidence.timeline import FaultRecord
from harness.judging.results import CaseResult, Check, replay_command
from harness.reports.results_json import jsonable
from harness.reports.summary import fault_family, is_failing, observed_label
from reference_impl.report import accepted_total

MAX_FAULT_ROWS = 50
END_WORDS = {"rst": "RST", "peer-rst": "RST from the producer", "fin": "FIN", "eof": "FIN"}
#: check.ok -> (row class, mark)
CHECK_MARKS = {True: ("ok", "\N{CHECK MARK}"), False: ("ko", "\N{BALLOT X}"), None: ("na", "-")}


def params_text(result: CaseResult) -> str:
    return ",".join(f"{name}={shown(value)}" for name, value in result.params)


def shown(value: object) -> str:
    """A swept value as the page writes it: plain values as Python prints them, others as
    their JSON (so a value read back from ``results.json`` reads the same)."""
    plain = jsonable(value)
    if plain is None or isinstance(plain, bool | int | float | str):
        return str(plain)
    return json.dumps(plain, separators=(",", ":"))


def verdict(result: CaseResult) -> str:
    """The consumer's verdict, or ``-`` without a report (a strip's colour)."""
    return result.report.verdict if result.report else "-"


def glance(result: CaseResult) -> str:
    """One line on where the stream to the consumer ended, per connection: what the proxy
    wrote to the consumer, what it had read from the producer by then (the producer may have
    sent more: a cut stops the reading), and, once a producer reached its end, its whole
    stream."""
    timeline = result.timeline
    parts = []
    for (connection, direction), leg in sorted(timeline.legs.items()):
        if direction != "downstream":
            continue
        end = timeline.end_of(connection, direction)
        how = END_WORDS.get(end.how, end.how) if end else "still open"
        read = f" of {end.read:,} B read from the producer" if end else ""
        parts.append(
            f"connection {connection}: {leg.written:,} B to the consumer{read}, then {how}"
        )
    if result.wire_complete and result.wire_bytes:
        parts.append(f"the producer's whole stream: {result.wire_bytes:,} B")
    return "; ".join(parts) or "no bytes reached the consumer"


def _missed(result: CaseResult) -> set[str]:
    """The expectation's keys the consumer's report did not meet: only those are drawn red."""
    return set(result.missed)


def facts(result: CaseResult) -> list[tuple[str, str, str]]:
    """(label, value, class) of each fact shown; the observed verdict marked when failing.
    The pcap link is not a fact here: each renderer links it its own way."""
    report = result.report
    accepted = f"{accepted_total(report)} messages in {report.reads} reads" if report else ""
    missed = _missed(result)
    # no report at all is red on a failing case; a report, where it differs from the expectation
    differs = missed & {"verdict", "complete"} if report else is_failing(result)
    rows = [
        ("expected", result.expected or "-", ""),
        ("observed", observed_label(result), "ko" if differs else ""),
        ("grade", result.grade or "", "ko" if result.grade == "failed" else ""),
        ("undetectable", "; ".join(result.undetectable), ""),
        ("accepted", accepted, "ko" if "accepted_messages" in missed else ""),
        ("link", f"{result.payload} over {result.framing}; faults: {fault_family(result)}", ""),
        ("sweep", params_text(result), ""),
        ("seed", str(result.seed), "code"),
        ("replay", replay_command(result), "code"),
        ("time", f"{result.duration_s * 1000:.0f} ms", ""),
        ("start-up", _startup(result), ""),
    ]
    return [row for row in rows if row[1]]


def _startup(result: CaseResult) -> str:
    """A consumer program's start until it connected, which its deadline did not count ('' for
    the other consumers, which start at once)."""
    if result.target.consumer is None:
        return ""
    if result.startup_s is None:
        return "did not connect"
    return f"{result.startup_s * 1000:.0f} ms until it connected (not in the deadline)"


def check_cells(check: Check) -> tuple[str, str, str, str]:
    """(row class, name, mark, evidence)."""
    cls, mark = CHECK_MARKS[check.ok]
    return cls, check.name, mark, check.evidence


def fault_cells(fault: FaultRecord) -> tuple[str, str, str, str, str, str]:
    """t (ms), connection, direction, fault, at byte, detail."""
    at = "-" if fault.offset is None else f"{fault.offset:,}"
    t = f"{fault.t * 1000:.1f}"
    return t, str(fault.connection), fault.direction, fault.name, at, fault.detail


def shown_faults(result: CaseResult) -> tuple[Sequence[FaultRecord], int]:
    """The fault applications a table lists, and how many more there are (results.json has
    them all)."""
    faults = result.timeline.faults
    return faults[:MAX_FAULT_ROWS], max(len(faults) - MAX_FAULT_ROWS, 0)


@dataclass(frozen=True, slots=True)
class Scenarios:
    """The scenarios of a run in order of first appearance, and each case's scenario number
    (the page's index and its strips share these numbers)."""

    keys: tuple[tuple[str, str], ...]  # (file, scenario name)
    of_case: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]  # case indices of each scenario, in run order


def scenarios(results: Sequence[CaseResult]) -> Scenarios:
    numbers: dict[tuple[str, str], int] = {}
    of_case = []
    members: list[list[int]] = []
    for i, r in enumerate(results):
        key = (r.file, r.scenario)
        if key not in numbers:
            numbers[key] = len(numbers)
            members.append([])
        of_case.append(numbers[key])
        members[numbers[key]].append(i)
    return Scenarios(tuple(numbers), tuple(of_case), tuple(tuple(m) for m in members))
