"""The link assembly: the one place a link is put together.

A link is a producer (tearline's, a recording played back, or the user's own service), the
fault proxy in front of it with its faults and the live streams that place them, and a
consumer of any kind (tearline's, the user's program, or the user's Python function), over
TLS when the link says so, under the case's deadline. Every command that runs a link builds it
here: ``run``, ``hunt`` and ``clients`` (through ``case.run_case``), ``record``, the standalone
``proxy``, the control API's proxies and the pytest fixtures (``fault_proxy``).

Deadlines: a link runs for ``deadline_ms`` at most, from the moment it starts (the producer's
and the proxy's start-up included, a consumer function's worker made ready before). Once the
consumer has its verdict, the proxy has up to ``SETTLE_S`` of what is left to record how each
leg ended.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import trio

from harness.evidence.timeline import Timeline
from harness.faults.config import Fault
from harness.link.case_wire import live_locators
from harness.link.live import LinkTraits
from harness.link.reference import ReferenceLink
from harness.proxy.server import ConnectionStore, LocatorFactory, Proxy, ProxyConfig
from harness.proxy.tlsio import ProxyTls
from harness.running.external import ProgramOutput, run_external_consumer
from harness.running.replay import ReplayProducer
from harness.running.tls import ca_file, consumer_tls, producer_tls, proxy_tls
from harness.scenario.model import Link, split_upstream
from reference_impl.defaults import LOOPBACK
from reference_impl.peers.consumer import run_consumer
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


async def run_link(link: Link, derived: ReferenceLink, wiring: Wiring, deadline_ms: float) -> Ran:
    """Producer, proxy and consumer in one nursery, until the consumer has its verdict and
    the proxy has settled, or the deadline ends them all (the proxy's record then shows the
    stream as it stood: a producer still sending is not made to look ended)."""
    await warm_consumer(link)
    consumed = Consumed()
    proxy: Proxy | None = None  # stays None if the deadline passes before it exists
    with trio.move_on_after(deadline_ms / 1000) as deadline:
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
            await consume(link, derived, port, consumed, deadline_ms)
            with trio.move_on_after(SETTLE_S):
                await proxy.wait_idle()
            nursery.cancel_scope.cancel()
    timed_out = deadline.cancelled_caught and consumed.report is None and not consumed.problem
    errors = () if proxy is None else tuple(dict.fromkeys(proxy.errors))
    return Ran(consumed, errors, timed_out)
