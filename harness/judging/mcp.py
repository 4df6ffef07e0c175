"""The judge of an MCP session (payload mcp): pure. The wire, the server's count of tool runs
and what the client said -> an outcome with its checks.

The session is read back from the proxy's timeline (``read_session``): each connection's
request as the server got it and its answer as the client got it, decoded with the reference
cores (``reference_impl/mcp``), and held to the session checker. So the invariants are judged
from the wire, the same for the reference client and for a real SDK's:

- ``M1`` nothing hangs: the client ended (answered, or with an error) before the deadline;
- ``M2`` no answer out of thin air: a client that says its tool calls returned did get each
  call's response on the wire;
- ``M3`` no tool twice: the server ran the tool at most once per call the client was asked for
  (a retry that runs it again is a violation, whatever the scenario expects);
- ``M4`` a lost session is replaced once: after a 404 to a request of the session, the
  client's next request is one ``initialize`` and the one after it the lost request again
  (the spec's MUST; a client that gives up there instead breaks it); a retry that is lost too
  may end the session;
- ``I5`` every declared fault fired (as for every case);
- ``expect``: the outcome (``answered`` or ``error``), the tool's executions, and for the
  reference client its error code and exactly the checker's findings on the wire (a
  misbehaving server's replay: what a replay carries depends on what the client asked for,
  so a real SDK's wire is not held to the reference client's findings).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.evidence.timeline import Timeline
from harness.judging.judge import DeclaredFault, Judgement, Observation, check_fidelity
from harness.judging.results import Check, Outcome
from harness.scenario.model import SessionExpect
from reference_impl.errors import CodecError
from reference_impl.framing.http1 import Received
from reference_impl.framing.request import Request as HttpRequest
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.checker import Finding, SessionChecker, Violation
from reference_impl.mcp.errors import McpError
from reference_impl.mcp.streams import parse_event_id
from reference_impl.mcp.wire import ClientExchange, Delivered, Head, Primed, ServerExchange


@dataclass(frozen=True, slots=True)
class ClientOutcome:
    """What the client said when it ended: how many tool calls returned their result, and the
    error it ended with (the reference client's code, a library's exception type), if any."""

    answered: int
    error: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class WireExchange:
    """One connection of the session as the wire showed it."""

    number: int
    method: str
    #: the JSON-RPC requests it carried (a POST), in order
    requests: tuple[jsonrpc.Request, ...] = ()
    status: int | None = None
    #: the ids of the session's tool calls whose result the client got on this connection
    results: tuple[jsonrpc.RequestId, ...] = ()


@dataclass(slots=True)
class SessionRead:
    exchanges: list[WireExchange] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: requests no response (nor error status) reached on the wire, by method
    unanswered: list[str] = field(default_factory=list)

    #: (session, id) of every tool call whose result reached the client
    results: set[tuple[int, jsonrpc.RequestId]] = field(default_factory=set)

    @property
    def calls_answered(self) -> int:
        return len(self.results)


def read_session(timeline: Timeline) -> SessionRead:
    """The session the proxy relayed, connection by connection (the client opens one per
    exchange), held to the session checker; a new session starts at each initialize."""
    read, checker = SessionRead(), SessionChecker()
    checkers = [checker]
    numbers = sorted({n for n, d in timeline.legs if d == "upstream"})
    for number in numbers:
        received = _request(bytes(timeline.leg(number, "upstream").data))
        if received is None:
            continue
        requests = _requests(received)
        if any(r.method == "initialize" for r in requests):
            checker = SessionChecker()
            checkers.append(checker)
        for request in requests:
            checker.request(request)
        answer = bytes(timeline.leg(number, "downstream").data)
        exchange = _answer(number, received, requests, answer, checker)
        read.exchanges.append(exchange)
        read.results |= {(len(checkers), ident) for ident in exchange.results}
    for one in checkers:
        for finding in one.violations():
            if finding.violation is Violation.NO_ANSWER:
                read.unanswered.append(one.sent[_id(finding.subject, one)])
            else:
                read.findings.append(finding)
    return read


def _id(subject: str, checker: SessionChecker) -> jsonrpc.RequestId:
    return next(i for i in checker.sent if str(i) == subject)


def _request(data: bytes) -> Received | None:
    try:
        got = ServerExchange().receive_data(data)
    except CodecError:  # bytes that are no HTTP request carry no JSON-RPC
        return None
    return got if isinstance(got, Received) else None


def _requests(received: Received) -> list[jsonrpc.Request]:
    if received.method != "POST":
        return []
    try:
        messages = jsonrpc.decode(received.body, batches=True)
    except McpError:
        return []
    return [m for m in messages if isinstance(m, jsonrpc.Request)]


def _answer(
    number: int,
    received: Received,
    requests: list[jsonrpc.Request],
    data: bytes,
    checker: SessionChecker,
) -> WireExchange:
    client = ClientExchange(batches=True)
    client.request(HttpRequest(received.method, received.target), received.method)
    items = client.receive_data(data) + client.receive_eof()
    resumed = received.headers.get("last-event-id")
    place = None if resumed is None else parse_event_id(resumed)
    stream = None if place is None else place[0]
    status: int | None = None
    results: list[jsonrpc.RequestId] = []
    for item in items:
        if isinstance(item, Head):
            status = item.status
        elif isinstance(item, Primed):
            checker.primed(item.event_id, stream)
        elif isinstance(item, Delivered):
            checker.received(item.message, item.event_id, stream)
            message = item.message
            if (
                isinstance(message, jsonrpc.Response)
                and checker.sent.get(message.id) == "tools/call"
            ):
                results.append(message.id)
    if status is not None and status >= 400:
        for request in requests:  # an error status answers what the POST carried
            checker.gave_up(request.id)
    return WireExchange(number, received.method, tuple(requests), status, tuple(results))


@dataclass(frozen=True, slots=True)
class McpObservation:
    timeline: Timeline
    declared: tuple[DeclaredFault, ...]
    #: tool calls the client was asked to make
    calls: int
    #: how many times the server ran the tool
    executions: int
    #: None: the client said nothing before the deadline
    outcome: ClientOutcome | None
    #: the client is tearline's (its error codes are compared)
    reference: bool = True
    problem: str = ""
    harness_error: str = ""


def judge_session(expect: SessionExpect, obs: McpObservation) -> tuple[Judgement, SessionRead]:
    read = read_session(obs.timeline)
    if obs.harness_error:
        return Judgement(Outcome.ERROR, obs.harness_error), read
    fidelity = check_fidelity(
        Observation(report=None, timeline=obs.timeline, declared=obs.declared)
    )
    if obs.outcome is None:
        why = obs.problem or "no outcome"
        hung = (Check("M1", False, why), fidelity)
        return Judgement(Outcome.NO_VERDICT, f"M1: the client hung: {why}", hung), read
    checks = (
        Check("M1", True, _ended(obs.outcome)),
        _invented(obs.outcome, read),
        _twice(obs),
        replaced_sessions(read),
        fidelity,
        _expectation(expect, obs, read),
    )
    if fidelity.ok is False:
        return Judgement(Outcome.INCONCLUSIVE, f"I5: {fidelity.evidence}", checks), read
    broken = [c for c in checks if c.name != "expect" and c.ok is False]
    if broken:
        text = "; ".join(f"{c.name}: {c.evidence}" for c in broken)
        return Judgement(Outcome.VIOLATION, text, checks), read
    expectation = checks[-1]
    outcome = Outcome.FAIL if expectation.ok is False else Outcome.PASS
    return Judgement(outcome, expectation.evidence, checks), read


def replaced_sessions(read: SessionRead) -> Check:
    """M4, from the order of the exchanges on the wire: a 404 to a request is followed by
    ``initialize`` and the request again; a 404 to a GET (a stream) by ``initialize``."""
    exchanges = [(e.status, e.requests[0].method if e.requests else None) for e in read.exchanges]
    lost = 0
    for index, (status, method) in enumerate(exchanges):
        if status != 404 or method == "initialize":
            continue
        before = [m for _, m in exchanges[:index] if m is not None]
        if method is not None and before and before[-1] == "initialize":
            continue  # the retry in the new session was lost too: once is enough
        lost += 1
        after = [m for _, m in exchanges[index + 1 :] if m is not None]
        wanted = ["initialize"] if method is None else ["initialize", method]
        if after[: len(wanted)] != wanted:
            what = "its stream (GET)" if method is None else method
            shown = ", then ".join(after[: len(wanted)]) or "nothing"
            text = f"after a 404 to {what} the client sent {shown}, not {', then '.join(wanted)}"
            return Check("M4", False, text)
    if not lost:
        return Check("M4", True, "no session was lost")
    return Check("M4", True, f"{lost} lost session(s), each replaced once")


def _ended(outcome: ClientOutcome) -> str:
    if outcome.error is None:
        return f"the client ended: {outcome.answered} tool call(s) answered"
    return f"the client ended with {outcome.error}: {outcome.detail}"


def _invented(outcome: ClientOutcome, read: SessionRead) -> Check:
    got = read.calls_answered
    if outcome.answered > got:
        text = (
            f"the client says {outcome.answered} tool call(s) returned; the wire delivered "
            f"{got} response(s)"
        )
        return Check("M2", False, text)
    return Check("M2", True, f"{got} tool call response(s) on the wire")


def _twice(obs: McpObservation) -> Check:
    if obs.executions > obs.calls:
        text = f"the tool ran {obs.executions} times for {obs.calls} call(s)"
        return Check("M3", False, text)
    return Check("M3", True, f"the tool ran {obs.executions} time(s) for {obs.calls} call(s)")


def _expectation(expect: SessionExpect, obs: McpObservation, read: SessionRead) -> Check:
    outcome = obs.outcome
    assert outcome is not None
    problems: list[str] = []
    ended = "answered" if outcome.error is None and outcome.answered == obs.calls else "error"
    if ended != expect.outcome:
        problems.append(f"expected {expect.outcome}, the client {_ended(outcome)}")
    elif expect.error is not None and obs.reference and outcome.error != expect.error:
        problems.append(f"expected error {expect.error}, got {outcome.error}")
    found = [f"{f.violation}:{f.subject}" for f in read.findings]
    wanted = [f.violation.value for f in read.findings]
    if obs.reference and wanted != list(expect.findings):
        problems.append(f"expected findings {list(expect.findings)}, the wire showed {found}")
    executions = obs.calls if expect.executions is None else expect.executions
    if obs.executions != executions:
        problems.append(f"expected {executions} tool run(s), the server made {obs.executions}")
    if problems:
        return Check("expect", False, "; ".join(problems))
    return Check(
        "expect", True, f"{ended}; findings {found or 'none'}; {obs.executions} tool run(s)"
    )
