"""A case run in memory: the reference producer's clean stream through the case's fault stages on
a virtual clock, into the reference consumer's pure core (``ConsumerSession``). No sockets.

What a case's expectation really depends on is read off such runs: the same case run again with
a consumer that lacks something (a read timeout only, no timeout at all, no size limit), and
the bytes the consumer got against the clean stream. ``dry_run`` returns None for what it does
not model (an upstream fault, a producer tearline did not write, a continued stream).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass, field, replace
from typing import Literal

from harness.faults.items import Boundary, Chunk, Close, End, Heartbeat, Item
from harness.faults.stage import Chain, LinkShape, StageContext
from harness.link.locator import PreparedLocator
from harness.link.prepared import PreparedLink
from harness.link.reference import consumer_config, prepared_link
from harness.record.adapt import websocket_accept
from harness.scenario import Scenario
from reference_impl.link.session import ConsumerSession
from reference_impl.report import ConsumerReport

#: how the consumer waits: the reference's timers, a read timeout alone (a client library's:
#: the idle timeout from the last byte, whatever is in flight, and no seed 000 timeout to call
#: a partial buffer stale, after a pause either), or not at all
Waiting = Literal["reference", "read-timeout", "none"]
MAX_STEPS = 100_000
#: how late a timer fires after its deadline (on a machine it is never exactly on time: the
#: guard calls a buffer of exactly the timeout's age not yet stale)
TIMER_LATE_S = 0.001


@dataclass
class Recorder:
    entries: list[str] = field(default_factory=list)

    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None:
        self.entries.append(name)


@dataclass
class DryRun:
    """One run's report (None: no verdict before the case's deadline) and what it got."""

    report: ConsumerReport | None
    #: the bytes each connection delivered to the consumer (heartbeats included)
    delivered: list[bytes]
    #: the longest time the consumer waited for a byte, in seconds
    longest_wait_s: float = 0.0


def modelled(scenario: Scenario) -> bool:
    link = scenario.link
    return not (
        link.producer.external
        or link.producer.mode == "continue"
        or link.tls
        or any(f.direction == "upstream" for f in scenario.faults)
    )


def dry_run(
    scenario: Scenario,
    *,
    waiting: Waiting = "reference",
    max_message_bytes: int | None = None,
    seed: int = 0,
) -> DryRun | None:
    if not modelled(scenario):
        return None
    prepared = prepared_link(scenario)
    config = consumer_config(scenario.link)
    if max_message_bytes is not None:
        options = replace(config.framing_options, max_message_bytes=max_message_bytes)
        config = replace(config, framing_options=options)
    if waiting == "none":
        config = replace(config, idle_timeout_s=math.inf, incomplete_message_timeout_s=math.inf)
    elif waiting == "read-timeout":
        config = replace(config, incomplete_message_timeout_s=math.inf)
    session = ConsumerSession(config)
    run = _Run(scenario, prepared, session, waiting, random.Random(seed))
    return run.go()


class _Run:
    def __init__(
        self,
        scenario: Scenario,
        prepared: PreparedLink,
        session: ConsumerSession,
        waiting: Waiting,
        rng: random.Random,
    ) -> None:
        self.scenario, self.prepared, self.session = scenario, prepared, session
        self.waiting, self.rng = waiting, rng
        self.now = 0.0
        self.horizon = scenario.deadline_ms / 1000
        self.last_byte = 0.0
        self.longest = 0.0
        self.delivered: list[bytes] = []
        consumer = scenario.link.consumer
        self.pause_at, self.pause_s = consumer.pause_at_message, consumer.pause_ms / 1000
        self.paused = False
        self.wire = prepared.wire

    def go(self) -> DryRun:
        reconnects = self.scenario.link.consumer.max_reconnects
        for number in range(1, reconnects + 2):
            if number > 1:
                self.session.discard_on_reconnect()
            self.wire = _answering(self.prepared.wire, self.session.connect(self.now))
            self.last_byte = self.now
            self.delivered.append(b"")
            if not self._connection(number):
                return DryRun(None, self.delivered, self.longest)
            if not self.session.should_reconnect():
                break
        return DryRun(self.session.report(), self.delivered, self.longest)

    def _chain(self, number: int) -> Chain:
        link = self.scenario.link
        shape = LinkShape(link.framing, link.framing_options.sse_body == "chunked")
        ctx = StageContext(
            "downstream",
            PreparedLocator(self.prepared),
            Recorder(),
            random.Random(self.rng.random()),
            self.now,
            shape,
        )
        faults = [f for f in self.scenario.faults if f.connection in (0, number)]
        return Chain([f.stage(ctx) for f in faults])

    def _inputs(self) -> list[Item]:
        """The producer's writes: the setup, then one per message, then its close."""
        wire, spans = self.wire, self.prepared.spans
        edges = sorted({0, *(s for s, _ in spans), *(e for _, e in spans), len(wire)})
        chunks: list[Item] = [Chunk(wire[a:b], a) for a, b in itertools.pairwise(edges) if b > a]
        return [*chunks, End()]

    def _connection(self, number: int) -> bool:
        """Run one connection to its end; False when the case's deadline came first."""
        chain, inputs = self._chain(number), self._inputs()
        for _ in range(MAX_STEPS):
            if self.session.done:
                self._drain(chain, inputs)
                return True
            wake = chain.wake_at
            if wake is not None and wake <= self.now:
                if self._deliver(chain.poll(self.now)):
                    return True
                continue
            if inputs and chain.accepting:
                if self._deliver(chain.pipe(inputs.pop(0), self.now)):
                    return True
                continue
            deadline = self._deadline()
            upcoming = min(wake if wake is not None else math.inf, deadline)
            if upcoming >= self.horizon:
                return False
            if deadline <= upcoming:
                self.now = deadline + TIMER_LATE_S
                self._wait_ends()
                self.session.end_of_stream("timeout", self.now)
                return True
            self.now = upcoming
        return False

    def _drain(self, chain: Chain, inputs: list[Item]) -> None:
        """What the proxy would still write after the consumer decided (the consumer reads no
        more; the bytes are kept to tell what the faults did)."""
        items: list[Item] = []
        while inputs:
            items += chain.pipe(inputs.pop(0), self.now)
        for _ in range(MAX_STEPS):
            wake = chain.wake_at
            if wake is None or wake >= self.horizon:
                break
            self.now = max(self.now, wake)
            items += chain.poll(self.now)
        for item in items:
            if isinstance(item, Close | End):
                return
            if isinstance(item, Chunk | Heartbeat):
                self.delivered[-1] += item.data

    def _deadline(self) -> float:
        if self.waiting == "read-timeout":
            return self.last_byte + self.session.config.idle_timeout_s
        return self.session.deadline()

    def _wait_ends(self) -> None:
        self.longest = max(self.longest, self.now - self.last_byte)

    def _deliver(self, items: list[Item]) -> bool:
        """Hand ``items`` to the consumer; True once the connection ended for it."""
        for item in items:
            if self.session.done:  # the consumer reads no more; the bytes are still written
                if isinstance(item, Chunk | Heartbeat):
                    self.delivered[-1] += item.data
                continue
            if isinstance(item, Chunk | Heartbeat):
                self._wait_ends()
                self.last_byte = self.now
                self.delivered[-1] += item.data
                self.session.receive(item.data, self.now)
                self._maybe_pause()
            elif isinstance(item, Close):
                self.session.end_of_stream("rst" if item.how == "rst" else "eof", self.now)
                return True
            elif isinstance(item, End):
                self.session.end_of_stream("eof", self.now)
                return True
            elif isinstance(item, Boundary):
                continue
        return self.session.done

    def _maybe_pause(self) -> None:
        """Seed 000's pause, as the reference consumer's shell takes it."""
        session = self.session
        if self.paused or self.pause_at is None or session.done:
            return
        if session.accepted_count >= self.pause_at and session.has_partial:
            self.paused = True
            checkpoint = session.checkpoint()
            self.now += self.pause_s
            session.resume(checkpoint, self.now)


_ACCEPT = re.compile(rb"(?im)^(sec-websocket-accept:[ \t]*)([A-Za-z0-9+/=]{28})")


def _answering(wire: bytes, request: bytes) -> bytes:
    """The clean stream answering this request: a WebSocket handshake's accept token is
    derived from the request's random key (28 characters either way: no byte moves)."""
    token = websocket_accept(request)
    if token is None:
        return wire
    return _ACCEPT.sub(lambda m: m.group(1) + token, wire, count=1)
