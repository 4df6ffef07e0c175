"""Shards joined into one run: the ``results.json`` of each shard, read back and checked.

A sharded run (``tearline run --shard K/N``) writes one report folder per shard; ``tearline
report`` joins their ``results.json`` into the reports of one run. Joined are only shards of
one run: the same tool version, the same library (``library``, a digest of the scenario
files, the selection and its seeds), the same N and pcap mode, every shard once, and every
position of the selection held by exactly one case. A shard's file must list every case's
timeline (``detail: all``, the default of ``--shard``): the page draws every case.

Pure: documents in, records and results out. The records are joined as they were written (so
the joined ``results.json`` says what the shards said); the page and ``junit.xml`` are rendered
from results rebuilt from them (``result_of``), holding what the renderers read: the consumer's
messages counted, not listed, and no leg bytes (the pcaps are the shards' files, copied).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.evidence.timeline import FaultRecord, HowEnded, Leg, LegEnd, Segment, Timeline
from harness.judging.results import CaseResult, Check, Grade, Outcome, Target
from harness.reports.refused import RefusedFile, from_record
from harness.reports.refused import records as refused_records
from harness.reports.results_json import RESULTS_VERSION
from harness.reports.summary import totals
from reference_impl.report import ConnectionSummary, ConsumerReport

#: what a passing case's record leaves out with ``detail: failing`` (``results_json``)
_LISTED_ONLY_WHEN_ALL = ("checks", "frames")


class JoinError(Exception):
    """Shards that cannot be joined; ``code`` says why, ``text`` in words (naming the file)."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code, self.text = code, text


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard's ``results.json``: where it came from (its folder's name) and what it says."""

    name: str
    document: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Joined:
    """The shards as one run."""

    #: every case's record, in the order of the whole selection
    records: tuple[dict[str, Any], ...]
    #: for each record with a pcap, the shard it is in (its name)
    pcap_shards: Mapping[int, str]
    #: the first shard's document: what every shard shares (version, tool, library, pcap)
    head: Mapping[str, Any]
    #: the longest shard's running time: shards run side by side
    elapsed_s: float
    shards: tuple[dict[str, Any], ...]

    @property
    def refused(self) -> tuple[RefusedFile, ...]:
        """The scenario files the run left out: every shard read them, so the first says."""
        return tuple(from_record(item) for item in self.head.get("refused_files") or ())


def _shard_of(shard: Shard) -> tuple[int, int]:
    text = shard.document.get("shard")
    if text is None:  # a whole run is its own only shard
        return 1, 1
    k, _, n = str(text).partition("/")
    return int(k), int(n)


def _check_alike(shards: Sequence[Shard]) -> None:
    for shard in shards:
        doc = shard.document
        if doc.get("tool") != "tearline" or doc.get("version") != RESULTS_VERSION:
            raise JoinError(
                "not-results", f"{shard.name}: not a tearline results.json of version 2"
            )
        if doc.get("detail") != "all":
            raise JoinError(
                "detail",
                f"{shard.name}: written with --report-detail failing: its passing cases have no "
                "timeline to draw (run the shards with --report-detail all, the default of "
                "--shard)",
            )
    first = shards[0]
    alike = (("tool_version", "tool version"), ("library", "library"), ("pcap", "pcap"))
    for key, what in (*alike, ("refused_files", "files left out")):
        for shard in shards[1:]:
            if shard.document.get(key) != first.document.get(key):
                raise JoinError(
                    key,
                    f"{shard.name}: {what} {shard.document.get(key)!r} is not "
                    f"{first.name}'s {first.document.get(key)!r}: not shards of one run",
                )


def _check_complete(shards: Sequence[Shard]) -> None:
    numbers = [_shard_of(s) for s in shards]
    counts = {n for _, n in numbers}
    if len(counts) != 1:
        raise JoinError("shard-count", f"shards of different counts: {sorted(counts)}")
    (n,) = counts
    seen: dict[int, str] = {}
    for shard, (k, _) in zip(shards, numbers, strict=True):
        if k in seen:
            raise JoinError("duplicate", f"{shard.name}: shard {k}/{n} again ({seen[k]})")
        seen[k] = shard.name
    if missing := [f"{k}/{n}" for k in range(1, n + 1) if k not in seen]:
        raise JoinError("missing", f"shard {', '.join(missing)} missing")


def join(shards: Sequence[Shard]) -> Joined:
    """The shards as one run, or ``JoinError``."""
    if not shards:
        raise JoinError("none", "no shard to join")
    _check_alike(shards)
    _check_complete(shards)
    selected = shards[0].document.get("selected")
    by_index: dict[int, tuple[dict[str, Any], str]] = {}
    for shard in shards:
        for record in shard.document["cases"]:
            index = record["index"]
            if index in by_index:
                other = by_index[index][1]
                raise JoinError("overlap", f"{shard.name}: case {record['id']} is in {other} too")
            by_index[index] = (record, shard.name)
    if sorted(by_index) != list(range(selected if isinstance(selected, int) else -1)):
        raise JoinError(
            "incomplete",
            f"the shards hold {len(by_index)} cases of a selection of {selected}: a shard of "
            "another selection (-k, --framing)?",
        )
    ordered = [by_index[i] for i in range(len(by_index))]
    runs = tuple(
        {
            "shard": "{}/{}".format(*_shard_of(s)),
            "created": s.document["created"],
            "command": list(s.document["command"]),
            "elapsed_s": s.document["elapsed_s"],
        }
        for s in sorted(shards, key=_shard_of)
    )
    return Joined(
        records=tuple(record for record, _ in ordered),
        pcap_shards={i: name for i, (record, name) in enumerate(ordered) if record["pcap"]},
        head=shards[0].document,
        elapsed_s=max(float(s.document["elapsed_s"]) for s in shards),
        shards=runs,
    )


def as_detail(record: Mapping[str, Any], detail: str, pcap: str | None) -> dict[str, Any]:
    """A full record as ``results_json.case_record`` writes it with ``detail`` (a passing
    case's lists left out with ``failing``), its pcap at ``pcap``."""
    out = dict(record, pcap=pcap)
    if detail == "all" or record["outcome"] != Outcome.PASS:
        return out
    for key in _LISTED_ONLY_WHEN_ALL:
        out[key] = None
    if out["observed"] is not None:
        out["observed"] = dict(out["observed"], connections=None)
    out["timeline"] = dict(out["timeline"], segments=None, legs=None)
    return out


def _timeline(raw: Mapping[str, Any]) -> Timeline:
    timeline = Timeline(
        segments=[Segment(**s) for s in raw["segments"] or ()],
        faults=[FaultRecord(**f) for f in raw["faults"]],
        ends=[LegEnd(**dict(e, how=HowEnded(e["how"]))) for e in raw["ends"]],
        segments_dropped=raw["segments_dropped"],
        faults_dropped=raw["faults_dropped"],
    )
    for leg in raw["legs"] or ():
        key = (leg["connection"], leg["direction"])
        timeline.legs[key] = Leg(key[0], key[1], written=leg["written"], capped=leg["capped"])
    return timeline


def _report(raw: Mapping[str, Any] | None) -> ConsumerReport | None:
    if raw is None:
        return None
    return ConsumerReport(
        verdict=raw["verdict"],
        complete=raw["complete"],
        error_code=raw["error_code"],
        framing_verdict=raw["framing_verdict"],
        connections=tuple(ConnectionSummary(**c) for c in raw["connections"] or ()),
        reads=raw["reads"],
        directive=raw["directive"],
        detail=raw["detail"],
        accepted_count=raw["accepted_messages"],
    )


def _target(raw: Mapping[str, Any] | None) -> Target:
    if raw is None:  # the reference consumer and producer
        return Target()
    consumer, request = raw["consumer"], raw["request"]
    return Target(
        consumer=None if consumer is None else tuple(consumer),
        function=raw["function"],
        upstream=raw["upstream"],
        tls=raw["tls"],
        upstream_ca=raw["upstream_ca"],
        upstream_insecure=raw["upstream_insecure"],
        request=tuple(request),
    )


def result_of(record: Mapping[str, Any]) -> CaseResult:
    """A case's result as its full record holds it, for the renderers."""
    grade = record["grade"]
    return CaseResult(
        case_id=record["id"],
        scenario=record["scenario"],
        file=record["file"],
        line=record["line"],
        seed=record["seed"],
        outcome=Outcome(record["outcome"]),
        diagnosis=record["diagnosis"],
        checks=tuple(Check(**c) for c in record["checks"] or ()),
        framing=record["framing"],
        payload=record["payload"],
        fault_kinds=tuple(record["fault_kinds"]),
        expected=record["expected"],
        params=tuple(record["params"].items()),
        duration_s=record["duration_s"],
        report=_report(record["observed"]),
        timeline=_timeline(record["timeline"]),
        wire_bytes=record["timeline"]["wire_bytes"],
        frames=tuple((start, end) for start, end in record["frames"] or ()),
        target=_target(record["target"]),
        grade=None if grade is None else Grade(grade),
        startup_s=record.get("startup_s"),
        undetectable=tuple(record["undetectable"]),
        wire_complete=record["wire_complete"],
        missed=tuple(record["missed"]),
    )


def joined_document(
    joined: Joined,
    results: Sequence[CaseResult],
    pcaps: Mapping[int, str],
    detail: str,
    created: str,
    command: Sequence[str],
) -> dict[str, Any]:
    """The joined run's ``results.json``: what the shards share, their records in the order
    of the selection (as ``detail`` writes them, pcaps renamed), and each shard's run."""
    head = joined.head
    return {
        "version": RESULTS_VERSION,
        "tool": "tearline",
        "tool_version": head["tool_version"],
        "created": created,
        "command": list(command),
        "elapsed_s": round(joined.elapsed_s, 6),
        "pcap": head["pcap"],
        "detail": detail,
        "library": head["library"],
        "shard": None,
        "selected": len(joined.records),
        "shards": list(joined.shards),
        "totals": totals(results),
        "refused_files": refused_records(joined.refused),
        "cases": [as_detail(r, detail, pcaps.get(i)) for i, r in enumerate(joined.records)],
    }
