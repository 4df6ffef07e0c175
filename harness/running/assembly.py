"""The link assembly: the one place a link is put together.

A link is a producer (tearline's, a recording played back, or the user's own service), the
fault proxy in front of it with its faults and the live streams that place them, and a
consumer of any kind (tearline's, the user's program, or the user's Python function), over
TLS when the link says so, under the case's deadline. Every command that runs a link builds it
here: ``run``, ``hunt`` and ``clients`` (through ``case.run_case``), ``record``, the standalone
``proxy``, the control API's proxies and the pytest fixtures (``fault_proxy``).

Deadlines: the case's ``deadline_ms`` measures the consumer, not its start-up. It starts when
the consumer starts consuming: tearline's consumer and a consumer function when they are
called (a function's worker made ready before), a consumer program when the proxy accepts its
first connection (its interpreter, imports and set-up not counted). Until then a bound of its
own applies, ``startup_ms`` (the producer's and the proxy's start-up, a program's start until
it connects); passing it is a diagnosis of its own, never a consumer's hang. Once the consumer
has its verdict, the proxy has up to ``SETTLE_S`` of what is left to record how each leg ended
(awaited: the proxy's last connection closing ends the wait).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import trio

from harness.config.limits import STARTUP_MS
from harness.evidence.timeline import Timeline
from harness.faults.config import Fault
from harness.judging.mcp import ClientOutcome
from harness.link.case_wire import live_locators
from harness.link.exchanges import SessionExchanges
from harness.link.live import LinkTraits
from harness.link.reference import ReferenceLink
from harness.proxy.server import ConnectionStore, LocatorFactory, Proxy, ProxyConfig
from harness.proxy.tlsio import ProxyTls
from harness.running.external import ProgramOutput, run_external_consumer
from harness.running.mcp_clients import MCP_TRAITS, run_mcp_client
from harness.running.replay import ReplayProducer
from harness.running.tls import ca_file, consumer_tls, producer_tls, proxy_tls
from harness.scenario.model import Link, McpConfig, split_upstream
from reference_impl.defaults import LOOPBACK
from reference_impl.peers.consumer import run_consumer
from reference_impl.peers.mcp_server import McpHttpServer
from reference_impl.peers.producer import Producer
from reference_impl.report import ConsumerReport

#: after the consumer's verdict: how long the proxy may take to record how each leg ended
SETTLE_S = 0.5


def fault_proxy(
    upstream: tuple[str, int],
    faults: Sequence[Fault] = (),
    *,
    traits: LinkTraits | None = None,
    seed: int = 0,
    locators: LocatorFactory | None = None,
    timeline: Timeline | None = None,
    store: ConnectionStore | None = None,
    live: bool = False,
    log: Callable[[str], None] | None = None,
    connect: Callable[[], Awaitable[trio.SocketStream]] | None = None,
    tls: ProxyTls | None = None,
    idle_after_end_s: float | None = None,
    exchanges: SessionExchanges | None = None,
) -> Proxy:
    """The fault proxy in front of ``upstream`` with ``faults`` placed on live streams that
    decode with ``traits`` (the producer's framing; None: raw bytes). ``locators`` replaces
    the live streams (a case's, which keep what the judge reads; a recording's tap); without
    it and without a fault nothing is decoded and legs copy as fast as they can."""
    traits = traits or LinkTraits()
    if locators is None and faults:
        locators = live_locators(traits, faults)
    config = ProxyConfig(
        upstream,
        faults,
        locators=locators,
        seed=seed,
        shape=traits.shape,
        log=log,
        connect=connect,
        tls=tls,
        idle_after_end_s=idle_after_end_s,
        exchanges=exchanges,
    )
    return Proxy(config, timeline, live=live, store=store)


@dataclass(slots=True)
class Consumed:
    """How the consumer ended: its report, or why it has none."""

    report: ConsumerReport | None = None
    problem: str = ""
    #: a consumer program's output (None for the other kinds)
    output: ProgramOutput | None = None


async def warm_consumer(link: Link) -> None:
    """Before a deadline starts: a consumer function's worker, whose library import can take
    seconds, is made ready (a program or tearline's consumer needs nothing)."""
    if link.consumer.function is not None:
        from harness.workers.invoke import warm_python_consumer  # noqa: PLC0415 - only when used

        await warm_python_consumer(link)


async def consume(
    link: Link, derived: ReferenceLink, port: int, consumed: Consumed, deadline_ms: float
) -> None:
    """Run the link's consumer, whatever its kind, against the proxy at ``port``; what it
    reports goes into ``consumed`` (a program's output too, even when a deadline cuts this)."""
    if link.consumer.function is not None:
        from harness.workers.invoke import run_python_consumer  # noqa: PLC0415 - only when used

        consumed.report, consumed.problem = await run_python_consumer(
            link, LOOPBACK, port, ca_file=ca_file(link) or None
        )
    elif link.consumer.command is not None:
        consumed.output = ProgramOutput()
        consumed.report, consumed.problem = await run_external_consumer(
            link, LOOPBACK, port, consumed.output, deadline_ms
        )
    else:
        consumed.report = await run_consumer(LOOPBACK, port, derived.consumer, consumer_tls(link))


async def start_upstream(
    link: Link, producer: Producer | None, nursery: trio.Nursery
) -> tuple[str, int]:
    """Where the proxy dials: the user's service, or a producer started in ``nursery``
    (a recording played back, or ``producer``, tearline's)."""
    if link.producer.upstream is not None:
        _, host, port = split_upstream(link.producer.upstream)  # TLS or not: the proxy's TLS
        return host, port
    if link.producer.replay is not None:
        serve = ReplayProducer.of(link.producer, link.framing).serve
    else:
        assert producer is not None, "a link without upstream or replay needs tearline's producer"
        serve = producer.serve
    port = await nursery.start(partial(serve, tls=producer_tls(link)), LOOPBACK, 0)
    return LOOPBACK, port


@dataclass(frozen=True, slots=True)
class Wiring:
    """What a run of a link puts on it beyond the link itself."""

    faults: Sequence[Fault] = ()
    seed: int = 0
    #: the proxy's locators (a case's live streams, a recording's tap)
    locators: LocatorFactory | None = None
    #: the producer (None: the link's upstream or replay)
    producer: Producer | None = None
    timeline: Timeline = field(default_factory=Timeline)


@dataclass(slots=True)
class Ran:
    """One run of a link: how the consumer ended, and what went wrong on the proxy's side."""

    consumed: Consumed
    #: the proxy's own failures, one line per distinct error (an unreachable upstream, a
    #: fault that could not run): the consumer was not tested as declared
    proxy_errors: tuple[str, ...] = ()
    #: the deadline cut the consumer off
    timed_out: bool = False
    #: seconds from the proxy's start (the timeline's zero) until the consumer started (a
    #: program: until the proxy accepted its first connection); None: it never did
    startup_s: float | None = None
    #: the start-up bound passed before the consumer started (``timed_out`` is then False)
    not_started: bool = False


class _Start:
    """When the consumer started, and the case's deadline moved to count from then."""

    def __init__(self, scope: trio.CancelScope, deadline_ms: float) -> None:
        self.scope, self.deadline_s = scope, deadline_ms / 1000
        #: when the proxy listened (the timeline's zero): the consumer's start-up counts from it
        self.began = 0.0
        self.at: float | None = None

    def now(self, when: float | None = None) -> None:
        self.at = trio.current_time() if when is None else when
        self.scope.deadline = self.at + self.deadline_s

    async def on_connection(self, proxy: Proxy) -> None:
        self.now(await proxy.wait_first_connection())

    @property
    def startup_s(self) -> float | None:
        return None if self.at is None else self.at - self.began


async def run_link(
    link: Link,
    derived: ReferenceLink,
    wiring: Wiring,
    deadline_ms: float,
    startup_ms: float = STARTUP_MS,
) -> Ran:
    """Producer, proxy and consumer in one nursery, until the consumer has its verdict and
    the proxy has settled, or a bound ends them all (the proxy's record then shows the stream
    as it stood: a producer still sending is not made to look ended): ``startup_ms`` until the
    consumer starts, then ``deadline_ms`` (the module's docstring)."""
    await warm_consumer(link)
    consumed = Consumed()
    proxy: Proxy | None = None  # stays None if the bound passes before it exists
    with trio.CancelScope() as bound:
        bound.deadline = trio.current_time() + startup_ms / 1000
        start = _Start(bound, deadline_ms)
        async with trio.open_nursery() as nursery:
            upstream = await start_upstream(link, wiring.producer, nursery)
            proxy = fault_proxy(
                upstream,
                wiring.faults,
                traits=derived.traits,
                seed=wiring.seed,
                locators=wiring.locators,
                timeline=wiring.timeline,
                tls=proxy_tls(link),
            )
            port = await nursery.start(proxy.serve, LOOPBACK, 0)
            start.began = proxy.timeline.started
            if link.consumer.command is not None:  # a program starts when it connects
                nursery.start_soon(start.on_connection, proxy)
            else:
                start.now()
            await consume(link, derived, port, consumed, deadline_ms)
            with trio.move_on_after(SETTLE_S):
                await proxy.wait_idle()
            nursery.cancel_scope.cancel()
    cut = bound.cancelled_caught and consumed.report is None and not consumed.problem
    errors = () if proxy is None else tuple(dict.fromkeys(proxy.errors))
    started = start.startup_s
    return Ran(consumed, errors, cut and started is not None, started, cut and started is None)


@dataclass(slots=True)
class McpRan:
    """One run of an MCP session: what the client said (None: nothing before the deadline,
    ``problem`` says why), and the reference server, which counted the tool's runs."""

    server: McpHttpServer
    outcome: ClientOutcome | None = None
    problem: str = ""
    proxy_errors: tuple[str, ...] = ()


async def run_mcp_link(
    link: Link, server: McpHttpServer, wiring: Wiring, deadline_ms: float
) -> McpRan:
    """The MCP session of a link (payload mcp): tearline's server, the fault proxy in front
    of it on live SSE streams, and the client (tearline's, or a client adapter in a process of
    its own, killed at the deadline: a client that hangs is a finding, not a hung run)."""
    ran = McpRan(server)
    config = link.payload_config
    assert isinstance(config, McpConfig)
    proxy: Proxy | None = None
    # faults that name a request are placed as the session's requests arrive
    named = any(f.request is not None for f in wiring.faults)
    exchanges = SessionExchanges() if named else None
    with trio.move_on_after(deadline_ms / 1000) as deadline:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve, LOOPBACK, 0)
            proxy = fault_proxy(
                (LOOPBACK, port),
                wiring.faults,
                traits=MCP_TRAITS,
                seed=wiring.seed,
                locators=wiring.locators,
                timeline=wiring.timeline,
                exchanges=exchanges,
            )
            proxy_port = await nursery.start(proxy.serve, LOOPBACK, 0)
            ran.outcome, ran.problem = await run_mcp_client(link, config, proxy_port)
            with trio.move_on_after(SETTLE_S):
                await proxy.wait_idle()
            nursery.cancel_scope.cancel()
    if deadline.cancelled_caught and ran.outcome is None and not ran.problem:
        ran.problem = f"no outcome within the case deadline ({deadline_ms:g} ms)"
    ran.proxy_errors = () if proxy is None else tuple(dict.fromkeys(proxy.errors))
    return ran
