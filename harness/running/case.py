"""Run and judge one case: its link assembled (``assembly.py``) under the case's deadline.

The proxy decodes the producer's stream as it relays it (``harness.link.case_wire``): the faults
are placed on that live stream and the judge reads what the producer sent from it, the same
for tearline's producer and anyone else's. Whatever happens (a hung or crashed consumer, an
unreachable upstream, a position the stream never reaches) ends as a judged ``CaseResult``:
the runner never raises for a case. Harness errors become the ``error`` outcome here, and
only here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from harness.config.limits import STARTUP_MS
from harness.consumers.catalogue import hands_on_transport
from harness.consumers.catalogue import lacks as adapter_lacks
from harness.errors import HarnessError, harness_error_in
from harness.evidence.connection import WireConnection
from harness.evidence.timeline import Timeline
from harness.judging.judge import DeclaredFault, Observation, judge, missed_keys
from harness.judging.needs import case_needs
from harness.judging.results import CaseResult, Check, Outcome, Target, expectation_text
from harness.link.blind import blind_effects, declared
from harness.link.case_wire import CaseWire, check_placeable
from harness.link.prepared import MAX_SPANS_KEPT
from harness.link.reference import reference_link
from harness.running.assembly import Consumed, Wiring, run_link
from harness.scenario import Case, Link
from harness.scenario.model import RequestConfig
from reference_impl.peers.producer import Producer
from reference_impl.report import ConsumerReport, bounded


def _target(link: Link) -> Target:
    consumer, producer = link.consumer, link.producer
    return Target(
        consumer=consumer.command,
        function=consumer.function,
        upstream=producer.upstream,
        tls=link.tls,
        upstream_ca=producer.upstream_ca,
        upstream_insecure=producer.upstream_insecure,
        request=request_options(link.request),
    )


def request_options(request: RequestConfig) -> tuple[str, ...]:
    """``request`` as ``tearline run``'s options (none for the plain default)."""
    words: list[str] = []
    if request.method is not None:
        words += ["-X", request.method]
    if request.path is not None:
        words += ["--path", request.path]
    for line in request.headers:
        words += ["-H", line]
    if request.body is not None:
        words += ["--data", request.body]
    if request.body_file is not None:
        words += ["--data-file", request.body_file]
    return tuple(words)


async def run_case(
    case: Case, seed: int | None = None, *, startup_ms: float = STARTUP_MS
) -> CaseResult:
    """Run and judge one case; never raises for anything the case does. ``startup_ms`` bounds
    the consumer's start-up, which its deadline does not count (``assembly.py``)."""
    if case.scenario.link.payload == "mcp":  # a session, judged from the wire as one
        from harness.running.mcp_case import run_mcp_case  # noqa: PLC0415 - it imports this

        return await run_mcp_case(case, seed)
    started = time.monotonic()
    scenario, seed = case.scenario, case.seed if seed is None else seed
    link = scenario.link
    derived = reference_link(link)
    external = link.producer.external  # yours, or a recording of it
    timeline = Timeline()
    producer = Producer(derived.producer)
    wire = CaseWire(derived.traits, scenario.faults)
    consumed = Consumed()
    startup_s: float | None = None
    try:
        # What no stream of this link can have (a length field on SSE) is a mistake in the
        # scenario: say so before anything listens.
        if problem := check_placeable(scenario.faults, derived.traits):
            raise problem
        wiring = Wiring(scenario.faults, seed, wire, None if external else producer, timeline)
        ran = await run_link(link, derived, wiring, scenario.deadline_ms, startup_ms)
        consumed, startup_s = ran.consumed, ran.startup_s
        if ran.timed_out:
            consumed.problem = _no_verdict(consumed, scenario.deadline_ms)
        elif ran.not_started:
            consumed.problem = _not_started(consumed, startup_ms)
        harness_error = "; ".join(ran.proxy_errors)
    except HarnessError as err:
        harness_error = err.text
    except ExceptionGroup as group:  # raised inside the case's nursery (a replay's recording)
        if (found := harness_error_in(group)) is None:
            raise
        harness_error = found.text
    connections = wire.connections(timeline)
    if consumed.report is None and consumed.problem and (held := wire.held()):
        consumed.problem += f"; {held}"  # what the stream held when the deadline came
    if external and not harness_error:
        harness_error = _setup_problems(connections, link.framing, timeline)
    report, cuts = (None, ()) if consumed.report is None else bounded(consumed.report)
    obs = Observation(
        report=report,
        timeline=timeline,
        declared=tuple(
            DeclaredFault(f.kind, f.connection, f.direction, blind_effects(derived.spec, f))
            for f in scenario.faults
        ),
        wire=connections,
        producer_max_held=None
        if external
        else max((c.max_held for c in producer.log.connections), default=0),
        channel_capacity=link.producer.channel_capacity_chunks,
        resumes=link.producer.mode == "continue",
        consumer_problem=consumed.problem,
        harness_error=harness_error,
        report_cuts=cuts,
        foreign=not _target(link).is_reference,
        transport_client=hands_on_transport(link.consumer.function),
        lacks=adapter_lacks(link.consumer.function),
        needs=frozenset() if _target(link).is_reference else case_needs(scenario),
        previews=wire.previews(),
        payload=declared(derived.spec).name,
    )
    verdict = judge(scenario.expect, obs)
    outcome = (verdict.outcome, verdict.diagnosis, verdict.checks)
    result = _result(case, seed, outcome, started, report, timeline, wire)
    return replace(
        result, grade=verdict.grade, undetectable=verdict.undetectable, startup_s=startup_s
    )


def _no_verdict(consumed: Consumed, deadline_ms: float) -> str:
    """Why a consumer the deadline cut off has no verdict (a program: what it said)."""
    problem = f"no verdict within the case deadline ({deadline_ms:g} ms)"
    if consumed.output is not None:  # the consumer program was killed: what did it say?
        problem = (
            f"no verdict within the case deadline ({deadline_ms:g} ms from its first "
            f"connection); killed; stderr: {consumed.output.stderr_tail()!r}"
        )
    return problem


def _not_started(consumed: Consumed, startup_ms: float) -> str:
    """Why a consumer that never started has no verdict: its start-up, not its consuming."""
    if consumed.output is None:  # tearline's own side did not get going (a starved machine)
        return f"the link did not start within the start-up bound ({startup_ms:g} ms)"
    return (
        f"consumer program did not connect within the start-up bound ({startup_ms:g} ms, "
        f"--startup-ms); killed; stderr: {consumed.output.stderr_tail()!r}"
    )


def _setup_problems(connections: Sequence[WireConnection], framing: str, timeline: Timeline) -> str:
    """A producer that does not speak the link's framing, or refuses the request, is a setup
    error, not a consumer's."""
    for conn in connections:
        if conn.refused:
            return f"upstream refused the request (connection {conn.number}): {conn.setup_problem}"
        if conn.over_limit:
            return f"connection {conn.number}: {conn.over_limit}"
        # (a fault that acted on the connection may be why: that is the case's to judge)
        acted = any(r.connection == 1 and r.name != "unreached" for r in timeline.faults)
        if conn.sent_bytes == 0 and conn.number == 1 and not acted:
            how = {"rst": "reset the connection", "eof": "closed the connection"}
            ended = how.get(conn.producer_closed or "", "stayed silent")
            return f"upstream sent nothing on connection 1: it {ended} without a byte"
        if conn.setup_problem:
            return (
                f"upstream does not speak {framing} (connection {conn.number}): "
                f"{conn.setup_problem}"
            )
    return ""


def _result(
    case: Case,
    seed: int,
    judged: tuple[Outcome, str, tuple[Check, ...]],
    started: float,
    report: ConsumerReport | None,
    timeline: Timeline,
    wire: CaseWire | None,
) -> CaseResult:
    scenario, link = case.scenario, case.scenario.link
    outcome, diagnosis, checks = judged
    origin = scenario.origin
    stream = None if wire is None else wire.fullest()
    return CaseResult(
        case_id=case.case_id,
        scenario=scenario.name,
        file=origin.file if origin else "",
        line=origin.line if origin else 0,
        seed=seed,
        outcome=outcome,
        diagnosis=diagnosis,
        checks=checks,
        framing=link.framing,
        payload=link.payload,
        fault_kinds=tuple(f.kind for f in scenario.faults),
        expected=expectation_text(scenario.expect),
        params=case.params,
        duration_s=time.monotonic() - started if started else 0.0,
        report=report,
        timeline=timeline,
        wire_bytes=None if stream is None else stream.seen,
        wire_complete=stream is not None and stream.reached_end,
        missed=missed_keys(report, scenario.expect),
        frames=() if stream is None else stream.spans(MAX_SPANS_KEPT),
        target=_target(link),
    )


def error_result(case: Case, seed: int | None, message: str) -> CaseResult:
    """The result of a case the harness itself failed to run (a bug, never the consumer's)."""
    seed = case.seed if seed is None else seed
    return _result(case, seed, (Outcome.ERROR, message, ()), 0.0, None, Timeline(), None)
