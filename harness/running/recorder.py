"""``tearline record``'s I/O: one exchange through the proxy, kept as a ``Recording``.

The proxy runs without faults in front of the producer, and a consumer (the reference one,
or the user's program, as ``tearline run`` starts them) makes one request through it. A tap
on each leg of the first connection (the proxy's ``Watcher`` hooks) keeps every read of the
leg's source before anything else touches it: the consumer's bytes, the producer's bytes,
each with the time of the read, and how each source ended. Those reads are the recording, so
it holds what was on the wire, not what a codec would have made.

Time zero is when the proxy's connection to the producer opened (its legs start then): the
producer cannot have sent anything earlier.

A recording is only worth keeping if it holds the stream the link was meant to get: what the
producer sent is decoded as a case's proxy decodes it, and an answer with an error status, or
bytes of another protocol, is refused (``RefusedError``, naming the status and the start of the
body) unless ``allow_refused`` keeps it anyway. The header keeps the request the consumer made
and the payload settings it read the stream with, so a replay needs neither restated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata

import trio

from harness.config.limits import MAX_STREAM_BYTES
from harness.errors import PositionError, RefusedError, SetupError
from harness.faults.items import Direction
from harness.faults.position import Position
from harness.link.case_wire import setup_problem
from harness.link.live import LinkTraits, LiveStream
from harness.link.reference import reference_link, request_of
from harness.record.format import End, Event, Meta, Read, Recording, Side
from harness.running.assembly import Wiring, run_link
from harness.scenario.model import Link
from reference_impl.report import ConsumerReport

SIDE_OF: dict[str, Side] = {"upstream": "consumer", "downstream": "producer"}


@dataclass(slots=True)
class _Tap:
    """What the legs of the first connection read, in the order they read it."""

    limit: int = MAX_STREAM_BYTES
    events: list[Event] = field(default_factory=list)
    started: float | None = None
    #: connections after the first (a consumer that reconnected): not recorded
    ignored: int = 0
    #: a side sent more than ``limit`` bytes (the rest was not kept)
    too_big: bool = False
    _sent: dict[str, int] = field(default_factory=lambda: {"consumer": 0, "producer": 0})

    def leg(self, direction: Direction, number: int) -> _Leg:
        if number != 1:
            self.ignored += direction == "downstream"
            return _Leg(self, SIDE_OF[direction], keep=False)
        if self.started is None:
            self.started = trio.current_time()
        return _Leg(self, SIDE_OF[direction], keep=True)

    def now_ms(self) -> float:
        assert self.started is not None
        return (trio.current_time() - self.started) * 1000

    def read(self, side: Side, data: bytes) -> None:
        self._sent[side] += len(data)
        if self._sent[side] > self.limit:
            self.too_big = True
            return
        self.events.append(Read(self.now_ms(), side, data))

    def ended(self, side: Side, how: str) -> None:
        self.events.append(End(self.now_ms(), side, "rst" if how == "rst" else "eof"))


class _Leg:
    """One leg's tap: the proxy's ``Watcher`` (and a ``Locator`` no fault asks anything)."""

    def __init__(self, tap: _Tap, side: Side, *, keep: bool) -> None:
        self.tap, self.side, self.keep = tap, side, keep

    def observe(self, data: bytes) -> None:
        if self.keep:
            self.tap.read(self.side, data)

    def observe_end(self, how: str) -> None:
        if self.keep:
            self.tap.ended(self.side, how)

    def observe_written(self, data: bytes) -> None:
        pass  # no fault runs: what is written is what was read

    def observe_closed(self, how: str) -> None:
        pass  # the source's own end (observe_end) is what a replay plays back

    # A recording runs no faults, so nothing asks where positions are.
    def offset(self, position: Position) -> int | None:
        raise PositionError("a recording runs no faults")

    def not_before(self, position: Position) -> int:
        raise PositionError("a recording runs no faults")

    def frame_span(self, index: int) -> tuple[int, int] | None:
        raise PositionError("a recording runs no faults")

    def length_field(self, index: int) -> tuple[int, int] | None:
        raise PositionError("a recording runs no faults")


@dataclass(frozen=True, slots=True)
class Recorded:
    recording: Recording
    #: the consumer's report (None: it had none, ``problem`` says why)
    report: ConsumerReport | None
    problem: str
    #: connections after the first, which are not in the recording
    ignored: int


def tearline_version() -> str:
    try:
        return metadata.version("tearline")
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return "unknown"


async def record(link: Link, deadline_s: float, *, allow_refused: bool = False) -> Recorded:
    """Record one exchange with the producer at ``link.producer.upstream`` (TLS to it when
    that is ``https://``; the consumer's side is plain TCP), made by the link's consumer of
    any kind; SetupError when there is nothing to record (the producer unreachable, the
    consumer never connected), RefusedError when what it sent is no stream of the link
    (unless ``allow_refused``)."""
    assert link.producer.upstream is not None
    tap = _Tap()
    created = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    derived = reference_link(link)
    ran = await run_link(link, derived, Wiring(locators=tap.leg), deadline_s * 1000)
    report, problem = ran.consumed.report, ran.consumed.problem
    if ran.timed_out:
        problem = f"no verdict within {deadline_s * 1000:g} ms: recorded what passed until then"
    if ran.proxy_errors:
        raise SetupError(ran.proxy_errors[0])
    if tap.started is None:
        raise SetupError(f"the consumer never connected ({problem or 'no reason given'})")
    if tap.too_big:
        raise SetupError(f"a side sent over {tap.limit >> 20} MiB, more than a recording holds")
    recording = Recording(_meta(link, created), tuple(tap.events))
    refused = stream_problem(recording, derived.traits)
    if not recording.sent("producer"):
        end = recording.end_of("producer")
        rst = end is not None and end.how == "rst"
        how = "reset the connection before a byte" if rst else "sent nothing"
        refused = f"the service {how} ({problem or 'the consumer ended'})"
    if refused and not allow_refused:
        raise RefusedError(refused)
    return Recorded(recording, report, problem, tap.ignored)


def _meta(link: Link, created: str) -> Meta:
    request = request_of(link)
    return Meta(
        framing=link.framing,
        payload=link.payload,
        tearline=tearline_version(),
        created=created,
        upstream=link.producer.upstream or "",
        consumer=link.consumer.command,
        consumer_function=link.consumer.function,
        request=replace(request, method=request.method_for(link.framing)),
        profile=None if link.tokens is None else link.tokens.profile,
    )


def stream_problem(recording: Recording, traits: LinkTraits) -> str:
    """Why the producer's side of ``recording`` is no stream of a link with ``traits`` (it
    answered with an error status, or speaks another protocol), decoded as a case's proxy
    decodes it; '' when it is one (a stream cut short is one: that is worth replaying)."""
    source = LiveStream(traits)
    for event in recording.events:
        if isinstance(event, Read) and event.side == "producer":
            source.observe(event.data)
        elif isinstance(event, End) and event.side == "producer":
            source.observe_end(event.how)
    return setup_problem(source) or source.over_limit
