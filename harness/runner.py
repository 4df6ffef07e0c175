"""Run one case: producer, proxy and consumer in one nursery, under the case's deadline.

The scenario model is turned into the reference link's configuration here (and only here), the
fault positions are checked against the expected wire before anything listens, and whatever
happens (a hung or crashed consumer, an unreachable upstream) ends as a judged ``CaseResult``:
the runner never raises for a case.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import trio

from harness.external import run_external_consumer
from harness.judge import Check, DeclaredFault, Observation, judge
from harness.locator import OffsetsLocator, WireLocator, check_positions
from harness.proxy import Proxy, ProxyConfig
from harness.scenario import Case, Link, Scenario
from harness.scenario.model import EnvelopeConfig, MessagesConfig, TokensConfig
from harness.timeline import Timeline
from reference_impl import link as ref_link
from reference_impl.consumer import ConsumerPolicy, run_consumer
from reference_impl.errors import CodecError
from reference_impl.framing import FramingOptions
from reference_impl.payload import envelope, messages, tokens
from reference_impl.producer import Producer, ProducerConfig
from reference_impl.report import ConsumerReport
from reference_impl.session import ConsumerConfig

CANNOT_MAKE = "link: the reference link cannot make this stream"
SETTLE_S = 0.5  # after the verdict: let the proxy record how each leg ended
LOOPBACK = "127.0.0.1"
MAX_FRAMES = 4096  # message spans kept on a CaseResult for the report's drawing


@dataclass(frozen=True, slots=True)
class CaseResult:
    case_id: str
    scenario: str
    file: str
    line: int
    seed: int
    outcome: str
    diagnosis: str
    checks: tuple[Check, ...]
    framing: str
    payload: str
    fault_kinds: tuple[str, ...]
    expected: str
    params: tuple[tuple[str, object], ...]
    duration_s: float
    report: ConsumerReport | None
    timeline: Timeline = field(repr=False)
    #: bytes of the clean producer->consumer stream (None: an external producer)
    wire_bytes: int | None = None
    #: ``[start, end)`` of the first MAX_FRAMES messages on that clean stream (for drawings)
    frames: tuple[tuple[int, int], ...] = field(default=(), repr=False)


def link_spec(link: Link) -> ref_link.LinkSpec:
    """The reference link for a scenario's ``link`` section."""
    config = link.payload_config
    options = FramingOptions(
        max_message_bytes=link.framing_options.max_message_bytes,
        sse_body=link.framing_options.sse_body,
        ws_text=link.framing_options.ws_text,
        ws_fragment_bytes=link.framing_options.ws_fragment_bytes,
    )
    spec = ref_link.LinkSpec(framing=link.framing, payload=link.payload, options=options)
    if isinstance(config, MessagesConfig):
        texts = config.texts
        return ref_link.LinkSpec(
            spec.framing,
            spec.payload,
            options=options,
            messages=messages.MessagesSpec(config.message_count, config.message_bytes, texts),
        )
    if isinstance(config, EnvelopeConfig):
        return ref_link.LinkSpec(
            spec.framing,
            spec.payload,
            options=options,
            envelope=envelope.EnvelopeSpec(config.records, config.chunk_records),
        )
    assert isinstance(config, TokensConfig)
    token_spec = tokens.TokenStreamSpec(
        config.profile,
        tokens.default_tokens(config.count, 0),
        advertise_length=config.advertise_length,
        send_completion=config.send_completion,
    )
    return ref_link.LinkSpec(spec.framing, spec.payload, options=options, tokens=token_spec)


def consumer_policy(link: Link, spec: ref_link.LinkSpec) -> ConsumerPolicy:
    consumer = link.consumer
    timeout_s = consumer.incomplete_message_timeout_ms / 1000
    config = ConsumerConfig(
        framing=link.framing,
        payload=link.payload,
        token_profile=spec.tokens.profile,
        framing_options=spec.options,
        incomplete_message_timeout_s=timeout_s,
        idle_timeout_s=consumer.idle_timeout_ms / 1000,
        accept_partial_at_safe_boundary=consumer.accept_partial_at_safe_boundary,
        resume=link.producer.mode == "continue",
        unframed=consumer.unframed,
    )
    return ConsumerPolicy(
        config,
        read_bytes=consumer.read_bytes,
        max_reconnects=consumer.max_reconnects,
        pause_at_message=consumer.pause_at_message,
        pause_ms=consumer.pause_ms,
    )


def stream_length(scenario: Scenario) -> int:
    """Bytes of the scenario's producer->consumer stream on a clean connection. ValueError
    (which ``expand`` reports as a scenario mistake) if the reference link cannot make it."""
    try:
        return len(ref_link.expected_wire(link_spec(scenario.link)).wire)
    except CodecError as err:
        raise ValueError(f"{CANNOT_MAKE} ({err})") from None


def frame_length(scenario: Scenario, frame: int) -> int:
    """Bytes that message ``frame`` (1-based) occupies on the scenario's wire; 0 if none."""
    spans = ref_link.expected_wire(link_spec(scenario.link)).spans
    if not 1 <= frame <= len(spans):
        return 0
    start, end = spans[frame - 1]
    return end - start


def _locators(spec: ref_link.LinkSpec) -> tuple[WireLocator, ref_link.ExpectedWire]:
    expected = ref_link.expected_wire(spec)
    datas = [m.data for m in ref_link.iter_payload(spec)]
    return WireLocator(spec.framing, expected, datas), expected


@dataclass(slots=True)
class _Run:
    report: ConsumerReport | None = None
    problem: str = ""


async def _consume(link: Link, spec: ref_link.LinkSpec, port: int, run: _Run) -> None:
    policy = consumer_policy(link, spec)
    if link.consumer.command is None:
        run.report = await run_consumer(LOOPBACK, port, policy)
        return
    run.report, run.problem = await run_external_consumer(link, policy, LOOPBACK, port)


def content_messages(spec: ref_link.LinkSpec) -> int:
    """How many leading messages carry the result. A token stream's result is its tokens:
    what follows the last token (finish frame, completion signal) proves the end but adds no
    content, so a stream complete by its advertised length may lack it (seed 002 gate 2)."""
    if spec.payload != "tokens":
        return sum(1 for _ in ref_link.iter_payload(spec))
    count = 0
    tracker = tokens.TokenTracker(spec.tokens.profile)
    for index, message in enumerate(ref_link.iter_payload(spec), start=1):
        before = tracker.received_tokens
        tracker.feed(message)
        if tracker.received_tokens > before:
            count = index
    return count


def payload_end(spec: ref_link.LinkSpec, expected: ref_link.ExpectedWire) -> int | None:
    """Downstream offset at which the last content message is committed (handed on). An SSE
    event is dispatched at its blank line; a chunked body's CRLF after it is transport."""
    last = content_messages(spec)
    if not last or last > len(expected.spans):
        return None
    end = expected.spans[last - 1][1]
    chunked_sse = spec.framing == "sse" and spec.options.sse_body == "chunked"
    return end - 2 if chunked_sse else end


async def run_case(case: Case, seed: int | None = None) -> CaseResult:
    """Run and judge one case; never raises for anything the case does."""
    started = time.monotonic()
    scenario, seed = case.scenario, case.seed if seed is None else seed
    link = scenario.link
    spec = link_spec(link)
    timeline = Timeline()
    try:
        locator, expected = _locators(spec)
        cannot_make = ""
    except CodecError as err:  # the reference codecs refuse to make this link at all
        expected = ref_link.ExpectedWire(b"", b"", (), (0, 0))
        locator, cannot_make = WireLocator(spec.framing, expected, ()), f"{CANNOT_MAKE} ({err})"
    external = link.producer.upstream is not None
    harness_error = cannot_make or check_positions(
        scenario.faults, OffsetsLocator() if external else locator
    )
    run, producer = (
        _Run(),
        Producer(
            ProducerConfig(
                spec, link.producer.mode == "continue", link.producer.channel_capacity_chunks
            )
        ),
    )
    if not harness_error:
        harness_error = await _run_wired(case, seed, spec, locator, producer, timeline, run)
    declared = tuple(DeclaredFault(f.kind, f.connection, f.direction) for f in scenario.faults)
    obs = Observation(
        report=run.report,
        timeline=timeline,
        declared=declared,
        producer_sent=None if external else tuple(tuple(c.sent) for c in producer.log.connections),
        producer_max_held=None
        if external
        else max((c.max_held for c in producer.log.connections), default=0),
        channel_capacity=link.producer.channel_capacity_chunks,
        payload_end=None if external else payload_end(spec, expected),
        content_messages=None if external else content_messages(spec),
        resumes=link.producer.mode == "continue",
        consumer_problem=run.problem,
        harness_error=harness_error,
    )
    verdict = judge(scenario.expect, obs)
    origin = scenario.origin
    return CaseResult(
        case_id=case.case_id,
        scenario=scenario.name,
        file=origin.file if origin else "",
        line=origin.line if origin else 0,
        seed=seed,
        outcome=verdict.outcome,
        diagnosis=verdict.diagnosis,
        checks=verdict.checks,
        framing=link.framing,
        payload=link.payload,
        fault_kinds=tuple(f.kind for f in scenario.faults),
        expected=_expected(scenario),
        params=case.params,
        duration_s=time.monotonic() - started,
        report=run.report,
        timeline=timeline,
        wire_bytes=None if external else len(expected.wire),
        frames=() if external else expected.spans[:MAX_FRAMES],
    )


def error_result(case: Case, seed: int | None, message: str) -> CaseResult:
    """The result of a case the harness itself failed to run (a bug, never the consumer's)."""
    scenario, link = case.scenario, case.scenario.link
    origin = scenario.origin
    return CaseResult(
        case_id=case.case_id,
        scenario=scenario.name,
        file=origin.file if origin else "",
        line=origin.line if origin else 0,
        seed=case.seed if seed is None else seed,
        outcome="error",
        diagnosis=message,
        checks=(),
        framing=link.framing,
        payload=link.payload,
        fault_kinds=tuple(f.kind for f in scenario.faults),
        expected=_expected(scenario),
        params=case.params,
        duration_s=0.0,
        report=None,
        timeline=Timeline(),
        wire_bytes=None,
        frames=(),
    )


def _expected(scenario: Scenario) -> str:
    e = scenario.expect
    parts = [e.verdict or " | ".join(e.any_of or ())]
    if e.complete is not None:
        parts.append(f"complete={e.complete}")
    return ", ".join(p for p in parts if p)


async def _upstream(link: Link, producer: Producer, nursery: trio.Nursery) -> tuple[str, int]:
    if link.producer.upstream is not None:
        host, _, port = link.producer.upstream.rpartition(":")
        return host.strip("[]"), int(port)
    port = await nursery.start(producer.serve, LOOPBACK, 0)
    return LOOPBACK, port


async def _run_wired(
    case: Case,
    seed: int,
    spec: ref_link.LinkSpec,
    locator: WireLocator,
    producer: Producer,
    timeline: Timeline,
    run: _Run,
) -> str:
    """Producer, proxy and consumer in one nursery; returns a harness error or ''."""
    scenario = case.scenario
    deadline_s = scenario.deadline_ms / 1000
    proxy: Proxy | None = None  # stays None if the deadline passes before it exists
    with trio.move_on_after(deadline_s) as scope:
        async with trio.open_nursery() as nursery:
            upstream = await _upstream(scenario.link, producer, nursery)
            has_wire = scenario.link.producer.upstream is None
            config = ProxyConfig(
                upstream,
                scenario.faults,
                seed=seed,
                locators=(lambda d, n: locator if d == "downstream" else OffsetsLocator())
                if has_wire
                else None,
            )
            proxy = Proxy(config, timeline)
            port = await nursery.start(proxy.serve, LOOPBACK, 0)
            await _consume(scenario.link, spec, port, run)
            with trio.move_on_after(SETTLE_S):
                await proxy.wait_idle()
            nursery.cancel_scope.cancel()
    if scope.cancelled_caught and run.report is None and not run.problem:
        run.problem = f"no verdict within the case deadline ({scenario.deadline_ms:g} ms)"
    # The proxy's own failures (unreachable upstream, a fault that could not run) mean the
    # consumer was not tested as declared, whatever it concluded.
    return "; ".join(proxy.errors) if proxy is not None else ""
