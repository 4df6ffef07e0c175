"""``results.json``: the machine-readable record of every case of a run.

The document's shape is ``results.schema.json`` beside this module (JSON Schema 2020-12), whose
descriptions are the reference; ``docs/reports.md`` shows it with an example. ``version`` grows
only when a key changes meaning or disappears: new keys may appear without a new version, so
readers must ignore keys they do not know.

``detail`` (``"failing"``, the default, or ``"all"``) says whose per-write ``segments`` are
listed: with ``"failing"`` a passing case keeps its faults, leg ends and leg totals, and its
``segments`` is null (a value, not a missing key: the key keeps its meaning where it is a
list, so the version stays). Those lists were a fifth of the file on the scenario library.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from harness.evidence.timeline import Timeline
from harness.judging.results import CaseResult, Target, replay_command
from harness.reports.refused import RefusedFile
from harness.reports.refused import records as refused_records
from harness.reports.summary import fault_family, is_failing, observed_label, totals
from reference_impl.report import ConsumerReport, accepted_total

RESULTS_VERSION = 2
SCHEMA_FILE = "results.schema.json"
DETAIL_MODES = ("failing", "all")
_PLAIN = (bool, int, float, str)
#: the target of a plain library run (the reference consumer and producer): written as null
_REFERENCE = Target()


@dataclasses.dataclass(frozen=True, slots=True)
class Selection:
    """Which cases a run ran: the library they come from, and the run's shard of it."""

    #: a digest of the scenario library the cases came from (its files, the selection, the
    #: seeds): the shards of one run share it (``tearline report`` joins no others)
    library: str = ""
    #: the run as shard (k, n) of several, 1-based; None: the whole selection
    shard: tuple[int, int] | None = None
    #: cases of the whole selection, every shard's together (None: these results)
    selected: int | None = None
    #: each result's position in the whole selection (None: 0, 1, 2, ...)
    positions: tuple[int, ...] | None = None
    #: the scenario files the run left out (they did not load or expand)
    refused: tuple[RefusedFile, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class RunInfo:
    """What a run was: the command, when it ran, how long it took, which cases."""

    command: tuple[str, ...]
    created: str  # UTC, ISO 8601 with a trailing Z
    elapsed_s: float
    pcap: str  # "failing" | "all" | "none"
    tool_version: str
    selection: Selection = Selection()


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of ``results.json``."""
    text = resources.files("harness.reports").joinpath(SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


_FIELDS: dict[type, tuple[str, ...]] = {}


def flat(record: Any) -> dict[str, Any]:
    """A dataclass of plain values as a dict (``dataclasses.asdict`` deep-copies every value,
    which made it most of the cost of this file on a 1,000-case run)."""
    names = _FIELDS.get(type(record))
    if names is None:
        names = _FIELDS[type(record)] = tuple(f.name for f in dataclasses.fields(record))
    return {name: getattr(record, name) for name in names}


def jsonable(value: object) -> Any:
    """A sweep value as JSON: tuples become lists, config dataclasses become objects."""
    if value is None or isinstance(value, _PLAIN):
        return value
    if isinstance(value, tuple | list):
        return [jsonable(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def _observed(report: ConsumerReport | None, full: bool) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "verdict": report.verdict,
        "complete": report.complete,
        "error_code": report.error_code,
        "framing_verdict": report.framing_verdict,
        "directive": report.directive,
        "accepted_messages": accepted_total(report),
        "accepted_bytes": sum(a.size for a in report.accepted),
        "reads": report.reads,
        "detail": report.detail,
        "connections": [flat(c) for c in report.connections] if full else None,
    }


def _timed(record: Any) -> dict[str, Any]:
    """A timeline record with its time to the microsecond (what a clock on a loaded machine
    can tell apart; 17 digits of a float are noise and bytes)."""
    fields = flat(record)
    fields["t"] = round(fields["t"], 6)
    return fields


def _timeline(timeline: Timeline, wire_bytes: int | None, segments: bool) -> dict[str, Any]:
    return {
        "wire_bytes": wire_bytes,
        "segments": [_timed(s) for s in timeline.segments] if segments else None,
        "segments_dropped": timeline.segments_dropped,
        "faults_dropped": timeline.faults_dropped,
        "faults": [_timed(f) for f in timeline.faults],
        "ends": [_timed(e) for e in timeline.ends],
        "legs": [
            {
                "connection": leg.connection,
                "direction": leg.direction,
                "written": leg.written,
                "kept": len(leg.data),
                "capped": leg.capped,
            }
            for leg in timeline.legs.values()
        ]
        if segments
        else None,
    }


def case_record(
    result: CaseResult, pcap: str | None, detail: str = "failing", index: int = 0
) -> dict[str, Any]:
    """One entry of ``cases``; ``pcap`` is the capture's path relative to the report folder;
    ``detail``: list the segments of failing cases only, or of ``"all"``; ``index``: the
    case's position in the whole selection."""
    segments = detail == "all" or is_failing(result)
    # A passing case's checks all say "ok" (their evidence is in the page's details); a case
    # that did not pass keeps every check with its evidence, its reason.
    checks = [flat(c) for c in result.checks] if segments else None
    return {
        "id": result.case_id,
        "index": index,
        "scenario": result.scenario,
        "file": result.file,
        "line": result.line,
        "seed": result.seed,
        "outcome": result.outcome,
        "grade": result.grade,
        "undetectable": list(result.undetectable),
        "diagnosis": result.diagnosis,
        "replay": replay_command(result),
        "framing": result.framing,
        "payload": result.payload,
        "fault_kinds": list(result.fault_kinds),
        "fault_family": fault_family(result),
        "params": {name: jsonable(value) for name, value in result.params},
        "expected": result.expected,
        "missed": list(result.missed),
        "observed_label": observed_label(result),
        "observed": _observed(result.report, segments),
        "checks": checks,
        "duration_s": round(result.duration_s, 6),
        "startup_s": None if result.startup_s is None else round(result.startup_s, 6),
        "wire_complete": result.wire_complete,
        "timeline": _timeline(result.timeline, result.wire_bytes, segments),
        "frames": [list(span) for span in result.frames] if segments else None,
        "target": None if result.target == _REFERENCE else jsonable(result.target),
        "pcap": pcap,
    }


def results_document(
    results: Sequence[CaseResult],
    run: RunInfo,
    pcaps: Mapping[int, str],
    detail: str = "failing",
) -> dict[str, Any]:
    """The whole document; ``pcaps`` maps a case's index in ``results`` to its capture;
    ``detail`` (``DETAIL_MODES``) whose segments are listed."""
    if detail not in DETAIL_MODES:
        raise ValueError(f"detail: expected one of {DETAIL_MODES}, got {detail!r}")
    chosen = run.selection
    positions = range(len(results)) if chosen.positions is None else chosen.positions
    return {
        "version": RESULTS_VERSION,
        "tool": "tearline",
        "tool_version": run.tool_version,
        "created": run.created,
        "command": list(run.command),
        "elapsed_s": round(run.elapsed_s, 6),
        "pcap": run.pcap,
        "detail": detail,
        "library": chosen.library,
        "shard": None if chosen.shard is None else "{}/{}".format(*chosen.shard),
        "selected": len(results) if chosen.selected is None else chosen.selected,
        "totals": totals(results),
        "refused_files": refused_records(chosen.refused),
        "cases": [
            case_record(r, pcaps.get(i), detail, positions[i]) for i, r in enumerate(results)
        ],
    }


def dumps(document: Mapping[str, Any]) -> str:
    """Compact (the file is for programs; ``jq .`` pretty-prints it), and never NaN."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
