"""A synthetic run of any size, for the report tests and ``benchmarks/bench_reports.py``.

``CaseResult`` objects built as the runner builds them (the wire timeline written through
``Timeline``'s own API, a consumer report, the judge's checks and wording), modelled on
``data/mixed.yaml`` and the scenario library: long cut sweeps over every offset of each
framing and payload, interleaved with small scenarios per fault family swept over the
framings; one case in twenty does not pass, every outcome among them. Deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count, cycle, islice

from harness.evidence.timeline import HowEnded, Timeline
from harness.judging.results import CaseResult, Check, Outcome
from reference_impl.report import Accepted, ConnectionSummary, ConsumerReport

FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")
HTTP = frozenset({"sse", "websocket", "grpc"})  # a request goes upstream first
#: payload -> (clean stream bytes, messages, verdict of a cut stream)
PAYLOADS = {
    "envelope": (5844, 14, "ERR_ZPARQL_STREAM_TRUNCATED"),
    "tokens": (1620, 40, "PARTIAL_MID_TOKEN"),
    "messages": (2048, 16, "STALE_PARTIAL_BUFFER"),
}
#: small scenarios: (file, scenario, fault kinds)
SMALL = (
    ("seed000-framing/split-anywhere", "split-inside-frame-2", ("split",)),
    ("seed000-framing/heartbeats", "stall-with-heartbeats", ("stall",)),
    ("seed001-envelope/corrupt-chunk", "flip-one-byte-in-chunk-3", ("corrupt",)),
    ("seed001-envelope/reconnect", "fin-then-reconnect-and-resume", ("reconnect",)),
    ("seed002-tokens/slices", "one-byte-slices-everywhere", ("slice",)),
    ("seed000-framing/clean", "clean-stream-verifies", ()),
)
FAILING = (
    Outcome.FAIL,
    Outcome.FAIL,
    Outcome.VIOLATION,
    Outcome.NO_VERDICT,
    Outcome.INCONCLUSIVE,
    Outcome.ERROR,
)
#: the n-th case of every FAILING_EVERY does not pass
FAILING_EVERY = 20


@dataclass(frozen=True, slots=True)
class Plan:
    file: str
    scenario: str
    framing: str
    payload: str
    kinds: tuple[str, ...]
    params: tuple[tuple[str, object], ...]
    cut: int | None  # where a kill or reconnect cuts the stream


def plans() -> Iterator[Plan]:
    """Cases in run order, forever: a cut sweep (100 to 700 offsets), then small scenarios
    over every framing (about 250 scenarios per 10^4 cases, as in the library)."""
    sweeps = ((f, p) for f in FRAMINGS for p in PAYLOADS)
    small = cycle(SMALL)
    for round_, (framing, payload) in zip(count(), cycle(sweeps), strict=False):
        stem = f"cut-every-offset-{framing}-{payload}-{round_ // 15}"
        total = PAYLOADS[payload][0]
        step = 1 + total // (100 + 150 * (round_ % 5))
        scenario = "cut-before-trailer-delivered"
        sweep = f"scenarios/sweeps/{stem}.yaml"
        for offset in range(0, total, step):
            offsets: tuple[tuple[str, object], ...] = (("offset", offset),)
            yield Plan(sweep, scenario, framing, payload, ("kill",), offsets, offset)
        for k in range(12):
            file, name, kinds = next(small)
            cut = 700 if kinds == ("reconnect",) else None
            for each in FRAMINGS:
                framings: tuple[tuple[str, object], ...] = (("framing", each),)
                small_file = f"scenarios/{file}-{12 * round_ + k}.yaml"
                yield Plan(small_file, name, each, "messages", kinds, framings, cut)


def _frames(total: int, messages: int) -> tuple[tuple[int, int], ...]:
    size = total // messages
    ends = [(i + 1) * size for i in range(messages - 1)] + [total]
    return tuple((i * size, end) for i, end in enumerate(ends))


def _stream(timeline: Timeline, plan: Plan, connection: int, upto: int, t: float) -> float:
    """The writes of one connection's leg to the consumer, message by message, up to byte
    ``upto``; faults that reshape the writes reshape them. Returns the time after the last."""
    total, messages, _ = PAYLOADS[plan.payload]
    frames = _frames(total, messages)
    per_write = max(1, messages // 4)  # the proxy writes what it read: a few messages at once
    writes = [
        (frames[i][0], frames[min(i + per_write, messages) - 1][1])
        for i in range(0, messages, per_write)
    ]
    for start, stop in writes:
        if start >= upto:
            break
        end = min(stop, upto)
        pieces = [(start, end)]
        if "split" in plan.kinds and start == writes[1][0]:
            pieces = [(start, (start + end) // 2), ((start + end) // 2, end)]
        if "slice" in plan.kinds and start == 0:  # the first 64 bytes one by one
            pieces = [(b, b + 1) for b in range(64)] + [(64, end)]
        for a, b in pieces:
            timeline.wrote(t, connection, "downstream", bytes(b - a))
            if "slice" in plan.kinds and b - a == 1:
                timeline.fault(t, connection, "downstream", "slice", a, "1 B")
            t += 0.0004
        if "stall" in plan.kinds and start == 0:
            for _ in range(3):
                t += 0.1
                timeline.wrote(t, connection, "downstream", b":\n\n", "heartbeat")
    return t


def _timeline(plan: Plan) -> Timeline:
    timeline = Timeline()
    total = PAYLOADS[plan.payload][0]
    connections = 2 if "reconnect" in plan.kinds else 1
    t = 0.002
    for connection in range(1, connections + 1):
        if plan.framing in HTTP:
            timeline.wrote(t, connection, "upstream", bytes(96), digest=False)
        cut = plan.cut if plan.cut is not None and connection == 1 else total
        t = _stream(timeline, plan, connection, cut, t + 0.001)
        if cut < total:
            timeline.fault(t, connection, "downstream", plan.kinds[0], cut, "rst")
            how = HowEnded.RST if plan.kinds == ("kill",) else HowEnded.FIN
        else:
            how = HowEnded.EOF
            if "corrupt" in plan.kinds:
                timeline.fault(t, connection, "downstream", "corrupt", total // 3, "0x5a -> 0xa5")
        timeline.ended(t, connection, "downstream", how, read=min(total, cut + 194))
        if plan.framing in HTTP:
            timeline.ended(t, connection, "upstream", HowEnded.EOF, read=96)
    return timeline


def _report(plan: Plan, timeline: Timeline) -> ConsumerReport:
    total, messages, cut_verdict = PAYLOADS[plan.payload]
    ends = {(e.connection, e.direction): e for e in timeline.ends}
    connections = []
    for (_, direction), end in sorted(ends.items()):
        if direction == "downstream":
            cut = end.how != HowEnded.EOF
            summary = ConnectionSummary(
                "rst" if end.how == HowEnded.RST else "eof",
                "STALE_PARTIAL_BUFFER" if cut else "MESSAGE_COMPLETE",
                "CONNECTION_RESET" if end.how == HowEnded.RST else None,
                max(1, end.written // 300),
                end.written,
            )
            connections.append(summary)
    complete = connections[-1].end == "eof"
    accepted = (Accepted("0" * 64, total // messages),) * messages if complete else ()
    return ConsumerReport(
        verdict="MESSAGE_COMPLETE" if complete else cut_verdict,
        complete=complete,
        error_code=None if complete else cut_verdict,
        framing_verdict=connections[-1].framing_verdict,
        accepted=accepted,
        connections=tuple(connections),
        reads=sum(c.reads for c in connections),
        detail="" if complete else "rst",
    )


def _checks(report: ConsumerReport, timeline: Timeline) -> tuple[Check, ...]:
    accepted = len(report.accepted)
    label = f"{report.verdict}, complete={report.complete}, {accepted} accepted"
    return (
        Check("I1", True, f"{accepted} accepted messages all byte-identical and in order"),
        Check("I2", True, "the consumer claimed no complete result"),
        Check("I3", True, f"{len(report.connections)} connection(s), no stale bytes accepted"),
        Check("I4", True, "verdict reached before the deadline"),
        Check("I5", True, f"{len(timeline.faults)} fault applications on the wire"),
        Check("I6", True, "producer held at most 3 messages (bound 3)"),
        Check("expect", True, label),
    )


def _judged(
    outcome: Outcome, report: ConsumerReport, timeline: Timeline
) -> tuple[str, tuple[Check, ...], ConsumerReport | None, Timeline]:
    """(diagnosis, checks, report, timeline) of a case with ``outcome``, as the judge words it."""
    checks = _checks(report, timeline)
    if outcome is Outcome.PASS:
        return checks[-1].evidence, checks, report, timeline
    if outcome is Outcome.FAIL:
        why = f"expected verdict RESULT_VERIFIED, got {report.verdict}"
        return why, (*checks[:-1], Check("expect", False, why)), report, timeline
    if outcome is Outcome.VIOLATION:
        why = "1 accepted message differs from the clean stream (message 3)"
        return f"I1: {why}", (Check("I1", False, why), *checks[1:]), report, timeline
    if outcome is Outcome.NO_VERDICT:
        why = "no verdict before the deadline (250 ms)"
        return f"I4: no verdict: {why}", (Check("I4", False, why), checks[4]), None, timeline
    if outcome is Outcome.INCONCLUSIVE:
        why = "kill (downstream, connection 2) never fired"
        return f"I5: {why}", (*checks[:4], Check("I5", False, why)), report, timeline
    return "faults[0].at.frame: frame positions need the link's framing", (), None, Timeline()


def synthetic_case(index: int, plan: Plan) -> CaseResult:
    """Case ``index`` of a run, following ``plan``."""
    failing = index % FAILING_EVERY == FAILING_EVERY - 1
    outcome = FAILING[(index // FAILING_EVERY) % len(FAILING)] if failing else Outcome.PASS
    wire = _timeline(plan)
    diagnosis, checks, report, timeline = _judged(outcome, _report(plan, wire), wire)
    stem = plan.file.rsplit("/", 1)[-1].removesuffix(".yaml")
    swept = ",".join(f"{name}={value}" for name, value in plan.params)
    total, messages, cut_verdict = PAYLOADS[plan.payload]
    expected = "RESULT_VERIFIED" if outcome is Outcome.FAIL else f"{cut_verdict}, complete=False"
    return CaseResult(
        case_id=f"{stem}::{plan.scenario}[{swept}]",
        scenario=plan.scenario,
        file=plan.file,
        line=1 + 12 * (len(plan.scenario) % 5),
        seed=(index * 0x9E3779B97F4A7C15) % (1 << 63),
        outcome=outcome,
        diagnosis=diagnosis,
        checks=checks,
        framing=plan.framing,
        payload=plan.payload,
        fault_kinds=plan.kinds,
        expected=expected,
        params=plan.params,
        duration_s=0.03 + (index % 7) / 100,
        report=report,
        timeline=timeline,
        wire_bytes=total,
        frames=_frames(total, messages),
    )


def synthetic_results(cases: int = 10_000) -> list[CaseResult]:
    """The first ``cases`` cases of the synthetic run."""
    return [synthetic_case(i, plan) for i, plan in enumerate(islice(plans(), cases))]
