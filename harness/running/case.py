"""Run one case: producer, proxy and consumer in one nursery, under the case's deadline.

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
from dataclasses import dataclass, replace
from functools import partial

import trio

from harness.consumers.catalogue import hands_on_transport
from harness.consumers.catalogue import lacks as adapter_lacks
from harness.errors import HarnessError, harness_error_in
from harness.evidence.connection import WireConnection
from harness.evidence.timeline import Timeline
from harness.faults.stage import LinkShape
from harness.judging.judge import DeclaredFault, Observation, judge
from harness.judging.needs import case_needs
from harness.judging.results import CaseResult, Check, Outcome, Target, expectation_text
from harness.link.case_wire import CaseWire, check_placeable
from harness.link.prepared import MAX_SPANS_KEPT
from harness.link.reference import consumer_policy, link_spec, link_traits, producer_config
from harness.proxy.server import Proxy, ProxyConfig
from harness.running.external import ProgramOutput, run_external_consumer
from harness.running.replay import ReplayProducer
from harness.running.tls import ca_file, consumer_tls, producer_tls, proxy_tls
from harness.scenario import Case, Link
from harness.scenario.model import split_upstream
from reference_impl.link.spec import LinkSpec
from reference_impl.peers.consumer import run_consumer
from reference_impl.peers.producer import Producer
from reference_impl.report import ConsumerReport, bounded

SETTLE_S = 0.5  # after the verdict: let the proxy record how each leg ended
LOOPBACK = "127.0.0.1"


@dataclass(slots=True)
class _Run:
    report: ConsumerReport | None = None
    problem: str = ""
    output: ProgramOutput | None = None  # an external consumer's output


async def _consume(link: Link, spec: LinkSpec, port: int, run: _Run, deadline_ms: float) -> None:
    if link.consumer.function is not None:
        from harness.workers.invoke import run_python_consumer  # noqa: PLC0415 - only when used

        run.report, run.problem = await run_python_consumer(
            link, LOOPBACK, port, ca_file=ca_file(link) or None
        )
        return
    if link.consumer.command is None:
        policy = consumer_policy(link, spec)
        run.report = await run_consumer(LOOPBACK, port, policy, consumer_tls(link))
        return
    run.output = ProgramOutput()
    run.report, run.problem = await run_external_consumer(
        link, LOOPBACK, port, run.output, deadline_ms
    )


def _target(link: Link) -> Target:
    consumer, producer = link.consumer, link.producer
    return Target(
        consumer=consumer.command,
        function=consumer.function,
        upstream=producer.upstream,
        tls=link.tls,
        upstream_ca=producer.upstream_ca,
        upstream_insecure=producer.upstream_insecure,
    )


async def run_case(case: Case, seed: int | None = None) -> CaseResult:
    """Run and judge one case; never raises for anything the case does."""
    started = time.monotonic()
    scenario, seed = case.scenario, case.seed if seed is None else seed
    link = scenario.link
    spec = link_spec(link)
    external = link.producer.external  # yours, or a recording of it
    timeline = Timeline()
    run, producer = _Run(), Producer(producer_config(link, spec))
    traits = link_traits(link, spec)
    wire = CaseWire(traits, scenario.faults)
    try:
        # What no stream of this link can have (a length field on SSE) is a mistake in the
        # scenario: say so before anything listens.
        if problem := check_placeable(scenario.faults, traits):
            raise problem
        harness_error = await _run_wired(case, seed, spec, wire, producer, timeline, run)
    except HarnessError as err:
        harness_error = err.text
    except ExceptionGroup as group:  # raised inside the case's nursery (a replay's recording)
        if (found := harness_error_in(group)) is None:
            raise
        harness_error = found.text
    connections = wire.connections(timeline)
    if external and not harness_error:
        harness_error = _setup_problems(connections, link.framing)
    report, cuts = (None, ()) if run.report is None else bounded(run.report)
    obs = Observation(
        report=report,
        timeline=timeline,
        declared=tuple(DeclaredFault(f.kind, f.connection, f.direction) for f in scenario.faults),
        wire=connections,
        producer_max_held=None
        if external
        else max((c.max_held for c in producer.log.connections), default=0),
        channel_capacity=link.producer.channel_capacity_chunks,
        resumes=link.producer.mode == "continue",
        consumer_problem=run.problem,
        harness_error=harness_error,
        report_cuts=cuts,
        foreign=not _target(link).is_reference,
        transport_client=hands_on_transport(link.consumer.function),
        lacks=adapter_lacks(link.consumer.function),
        needs=frozenset() if _target(link).is_reference else case_needs(scenario),
        previews=wire.previews(),
    )
    verdict = judge(scenario.expect, obs)
    outcome = (verdict.outcome, verdict.diagnosis, verdict.checks)
    return replace(
        _result(case, seed, outcome, started, report, timeline, wire), grade=verdict.grade
    )


def _setup_problems(connections: Sequence[WireConnection], framing: str) -> str:
    """A producer that does not speak the link's framing is a setup error, not a consumer's."""
    for conn in connections:
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
        frames=() if stream is None else stream.spans(MAX_SPANS_KEPT),
        target=_target(link),
    )


def error_result(case: Case, seed: int | None, message: str) -> CaseResult:
    """The result of a case the harness itself failed to run (a bug, never the consumer's)."""
    seed = case.seed if seed is None else seed
    return _result(case, seed, (Outcome.ERROR, message, ()), 0.0, None, Timeline(), None)


async def _upstream(link: Link, producer: Producer, nursery: trio.Nursery) -> tuple[str, int]:
    if link.producer.upstream is not None:
        _, host, port = split_upstream(link.producer.upstream)  # TLS or not: ProxyConfig.tls
        return host, port
    serve = producer.serve
    if link.producer.replay is not None:  # a recording played back as the producer
        serve = ReplayProducer.of(link.producer, link.framing).serve
    port = await nursery.start(partial(serve, tls=producer_tls(link)), LOOPBACK, 0)
    return LOOPBACK, port


async def _run_wired(
    case: Case,
    seed: int,
    spec: LinkSpec,
    wire: CaseWire,
    producer: Producer,
    timeline: Timeline,
    run: _Run,
) -> str:
    """Producer, proxy and consumer in one nursery; returns a harness error or ''."""
    scenario = case.scenario
    link = scenario.link
    deadline_s = scenario.deadline_ms / 1000
    proxy: Proxy | None = None  # stays None if the deadline passes before it exists
    if link.consumer.function is not None:
        # A client library's import (seconds for some) is no part of the case's deadline.
        from harness.workers.invoke import warm_python_consumer  # noqa: PLC0415

        await warm_python_consumer(link)
    with trio.move_on_after(deadline_s) as scope:
        async with trio.open_nursery() as nursery:
            upstream = await _upstream(link, producer, nursery)
            config = ProxyConfig(
                upstream,
                scenario.faults,
                seed=seed,
                locators=wire,
                shape=LinkShape(link.framing, link.framing_options.sse_body == "chunked"),
                tls=proxy_tls(link),
            )
            proxy = Proxy(config, timeline)
            port = await nursery.start(proxy.serve, LOOPBACK, 0)
            await _consume(link, spec, port, run, scenario.deadline_ms)
            with trio.move_on_after(SETTLE_S):
                await proxy.wait_idle()
            nursery.cancel_scope.cancel()
    if scope.cancelled_caught and run.report is None and not run.problem:
        run.problem = f"no verdict within the case deadline ({scenario.deadline_ms:g} ms)"
        if run.output is not None:  # the consumer program was killed: what did it say?
            run.problem += f"; killed; stderr: {run.output.stderr_tail()!r}"
    # The proxy's own failures (unreachable upstream, a fault that could not run) mean the
    # consumer was not tested as declared, whatever it concluded.
    # (one line per distinct error: a fault that cannot be placed fails every connection alike)
    return "; ".join(dict.fromkeys(proxy.errors)) if proxy is not None else ""
