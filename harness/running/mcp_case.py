"""Run and judge one MCP session case (payload mcp): its link assembled
(``assembly.run_mcp_link``) under the case's deadline, judged from the wire
(``harness/judging/mcp.py``). Like ``case.run_case``, it never raises for anything the case
does: a harness error is the ``error`` outcome, here."""

from __future__ import annotations

import time

from harness.errors import HarnessError
from harness.evidence.timeline import Timeline
from harness.faults.config import Fault
from harness.judging.judge import DeclaredFault
from harness.judging.mcp import McpObservation, judge_session
from harness.judging.results import CaseResult, Grade, Outcome, Target, expectation_text
from harness.link.case_wire import CaseWire, check_placeable
from harness.running.assembly import McpRan, Wiring, run_mcp_link
from harness.running.mcp_clients import MCP_TRAITS
from harness.scenario import Case
from harness.scenario.model import McpConfig
from reference_impl.mcp.server import TOOL
from reference_impl.mcp.settings import ServerSettings
from reference_impl.peers.mcp_server import McpHttpServer


def server_for(config: McpConfig) -> McpHttpServer:
    settings = ServerSettings(
        version=config.version,  # type: ignore[arg-type]
        answer=config.answer,
        mode=config.server_mode,  # type: ignore[arg-type]
        retry_ms=config.retry_ms,
        close_after_events=config.close_after_events,
    )
    return McpHttpServer(settings, event_delay_ms=config.event_delay_ms)


async def run_mcp_case(case: Case, seed: int | None = None) -> CaseResult:
    started = time.monotonic()
    scenario, seed = case.scenario, case.seed if seed is None else seed
    link, expect = scenario.link, scenario.expect
    config = link.payload_config
    assert isinstance(config, McpConfig) and expect.session is not None
    timeline, server = Timeline(), server_for(config)
    ran, harness_error = McpRan(server), ""
    try:
        if problem := check_placeable(scenario.faults, MCP_TRAITS):
            raise problem
        wiring = Wiring(
            scenario.faults, seed, CaseWire(MCP_TRAITS, scenario.faults), None, timeline
        )
        ran = await run_mcp_link(link, server, wiring, scenario.deadline_ms)
        harness_error = "; ".join(ran.proxy_errors)
    except HarnessError as err:
        harness_error = err.text
    reference = link.consumer.function is None
    obs = McpObservation(
        timeline=timeline,
        declared=tuple(_declared(f) for f in scenario.faults),
        calls=config.calls,
        executions=server.executions[TOOL],
        outcome=ran.outcome,
        reference=reference,
        problem=ran.problem,
        harness_error=harness_error,
    )
    judged, _ = judge_session(expect.session, obs)
    origin = scenario.origin
    return CaseResult(
        case_id=case.case_id,
        scenario=scenario.name,
        file=origin.file if origin else "",
        line=origin.line if origin else 0,
        seed=seed,
        outcome=judged.outcome,
        diagnosis=judged.diagnosis,
        checks=judged.checks,
        framing=link.framing,
        payload=link.payload,
        fault_kinds=tuple(f.kind for f in scenario.faults),
        expected=expectation_text(expect),
        params=case.params,
        duration_s=time.monotonic() - started,
        report=None,
        timeline=timeline,
        target=Target(function=link.consumer.function),
        grade=None if reference else _grade(judged.outcome),
    )


def _declared(fault: Fault) -> DeclaredFault:
    """A fault as I5 holds it: on its connection, or (one that names a request) on whichever
    connection that exchange came."""
    if fault.request is None:
        return DeclaredFault(fault.kind, fault.connection, fault.direction)
    return DeclaredFault(fault.kind, 0, fault.direction, exchange=fault.request.describe())


def _grade(outcome: Outcome) -> Grade:
    """A client adapter's grade: the session's invariants and expectation held (strict), or
    not (failed); a case that could not be run or proven is failed too (never ok)."""
    return Grade.STRICT if outcome is Outcome.PASS else Grade.FAILED
