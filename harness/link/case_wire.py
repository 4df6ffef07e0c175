"""The live streams of one case: the proxy's locators, and the judge's evidence.

The proxy asks for a locator when it opens each leg (``ProxyConfig.locators``); ``CaseWire``
makes a ``LiveStream`` for it and keeps it. The producer's direction decodes with the link's
framing and payload, and also decodes what the proxy writes to the consumer; the consumer's
direction (its request) is a raw byte stream, where ``offset``, ``match`` and time positions
work. After the case, ``connections()`` turns what the streams saw into the judge's
``WireConnection`` facts: one code path for tearline's producer and anyone else's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from harness.errors import HarnessError
from harness.evidence.connection import WireConnection
from harness.evidence.timeline import Timeline
from harness.faults.config import Fault
from harness.faults.effects import Effect
from harness.faults.items import Direction
from harness.faults.position import Position
from harness.faults.registry import fault_class
from harness.link.live import EVERY_FRAME, LinkTraits, LiveStream
from harness.link.locator import placement_problem
from reference_impl.errors import ErrorCode
from reference_impl.framing import FramingName

#: the errors that mean a stream is not of the framing at all (rather than broken inside it)
SETUP_ERRORS = frozenset(
    {ErrorCode.PROTOCOL_ERROR, ErrorCode.MALFORMED_FRAME, ErrorCode.HTTP_STATUS}
)
DIRECTIONS: tuple[Direction, ...] = ("downstream", "upstream")


def frames_wanted(faults: Iterable[Fault]) -> int:
    """The highest frame whose bounds the faults can ask for: every frame they name, the
    frames a merge counts on from its start, and all of them for a merge that starts at a
    byte position rather than a frame (its frames are only known as it holds them)."""
    return max((_named_frames(fault) for fault in faults), default=0)


def _named_frames(value: object) -> int:
    if isinstance(value, Position):
        return value.frame or 0
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return 0
    found = 0
    for item in dataclasses.fields(value):
        inner = getattr(value, item.name)
        if item.name in ("frame", "with_frame") and isinstance(inner, int):
            found = max(found, inner)
        else:
            found = max(found, _named_frames(inner))
    count = getattr(value, "count_frames", None)
    if isinstance(count, int):
        at = getattr(value, "at", None)
        start = at.frame if isinstance(at, Position) else None
        found = max(found, EVERY_FRAME if start is None else start + count - 1)
    return found


def request_traits(traits: LinkTraits) -> LinkTraits:
    """The consumer's direction of a link: raw bytes whose request's end is found."""
    return LinkTraits(traits.framing, request=traits.framing is not None)


def live_locators(
    traits: LinkTraits, faults: Sequence[Fault] | Callable[[], Iterable[Fault]]
) -> Callable[[Direction, int], LiveStream]:
    """A proxy's locators in front of a service (``tearline proxy``, its API, the fixtures): a
    live stream per leg, the producer's decoded with ``traits`` when a fault names its frames,
    the request raw. With no fault that needs frames nothing is decoded: byte, match,
    character and time positions read the raw bytes, and the copy costs what it costs without
    ``--framing`` (decoding costs 6-30x, ``benchmarks/bench_live.py``). ``faults`` is the
    faults, or (a proxy whose faults change while it runs) what returns them as they stand
    when a leg opens."""
    current = faults if callable(faults) else lambda: faults
    raw = LinkTraits(None)

    def locator(direction: Direction, number: int) -> LiveStream:
        wanted = frames_wanted(f for f in current() if f.direction == direction)
        if direction == "upstream":
            return LiveStream(request_traits(traits), wanted)
        return LiveStream(traits if wanted else raw, wanted)

    return locator


def check_placeable(faults: Sequence[Fault], traits: LinkTraits) -> HarnessError | None:
    """Before any byte: the first fault no live stream with ``traits`` could place (a frame
    position on a stream whose framing is not known), else None."""
    for index, fault in enumerate(faults):
        chosen = traits if fault.direction == "downstream" else request_traits(traits)
        problem = placement_problem(fault, LiveStream(chosen))
        if problem is not None:
            return problem.within("faults", index)
    return None


def _fired(timeline: Timeline, number: int, effect: Effect) -> bool:
    """Whether a fault with ``effect`` fired on connection ``number``'s producer stream."""
    for record in timeline.faults:
        cls = fault_class(record.name)
        wanted = cls is not None and effect in cls.effects
        if wanted and record.connection == number and record.direction == "downstream":
            return True
    return False


class CaseWire:
    """A ``LiveStream`` per leg the proxy opens (see the module docstring)."""

    def __init__(self, traits: LinkTraits, faults: Sequence[Fault]) -> None:
        self.traits = traits
        self.wanted = {d: frames_wanted(f for f in faults if f.direction == d) for d in DIRECTIONS}
        self.streams: dict[tuple[Direction, int], LiveStream] = {}

    def __call__(self, direction: Direction, number: int) -> LiveStream:
        """The proxy's ``LocatorFactory``."""
        traits = self.traits if direction == "downstream" else request_traits(self.traits)
        stream = LiveStream(traits, self.wanted[direction])
        if direction == "downstream":
            stream.watch_delivery()
        self.streams[(direction, number)] = stream
        return stream

    def connections(self, timeline: Timeline) -> tuple[WireConnection, ...]:
        """What each connection's producer stream showed, in connection order."""
        numbers = sorted(n for d, n in self.streams if d == "downstream")
        return tuple(self._connection(n, timeline) for n in numbers)

    def _connection(self, number: int, timeline: Timeline) -> WireConnection:
        source = self.streams[("downstream", number)]
        delivered = source.delivered
        assert delivered is not None  # every downstream stream watches its delivery
        # a rewrite in place may leave a changed message valid; added bytes no source sent
        rewritten = _fired(timeline, number, Effect.CORRUPTION)
        added = _fired(timeline, number, Effect.ADDITION)
        return WireConnection(
            number=number,
            sent=tuple(source.digests),
            carrying=source.carrying,
            sent_past=source.ledger.past,
            carrying_count=source.carrying_count,
            carrying_through=source.carrying_through,
            producer_end=source.reached_end,
            delivered_end=delivered.reached_end,
            delivered=delivered.ledger.count,
            received=tuple(delivered.digests),
            delivered_as=_unseen_changes(source, delivered) if rewritten else (),
            payload_changed=_payload_changes(source, delivered) if rewritten else (),
            payload_added=_payload_added(source, delivered) if added else (),
            injected=_injected(source, delivered) if _fired_kind(timeline, number) else (),
            setup_problem=setup_problem(source),
            over_limit=source.over_limit,
            sent_bytes=source.seen,
            producer_closed=source.eof,
            refused=source.error is not None and source.error.code == ErrorCode.HTTP_STATUS,
        )

    def held(self) -> str:
        """What the producer's stream on connection 1 held, in words ('' when none was
        seen): why a consumer may have had nothing to decide on."""
        source = self.streams.get(("downstream", 1))
        if source is None:
            return ""
        if not source.seen:
            return "the producer sent nothing on connection 1"
        if source.head_end is None:
            return (
                f"the producer sent {source.seen} bytes on connection 1, its response head unended"
            )
        count = source.ledger.count
        end = "its end" if source.reached_end else "no end"
        return f"the producer sent {source.seen} bytes on connection 1: {count} messages, {end}"

    def fullest(self) -> LiveStream | None:
        """The producer's stream that went furthest (one that reached its own end first): what
        the reports draw as "the stream" next to what each connection got of it."""
        down = [s for (d, _), s in sorted(self.streams.items()) if d == "downstream"]
        return max(down, key=lambda s: (s.reached_end, s.seen), default=None)

    def previews(self) -> dict[str, str]:
        """A short text of every message the producer sent, by digest (for diagnoses)."""
        shown: dict[str, str] = {}
        for (direction, _), stream in self.streams.items():
            if direction == "downstream":
                shown.update(stream.previews)
                if stream.delivered is not None:
                    shown.update(stream.delivered.previews)
        return shown


def _unseen_changes(source: LiveStream, delivered: LiveStream) -> tuple[tuple[str, str], ...]:
    """Messages a rewriting fault turned into other messages that still decode, of the same
    size and in the same place, which the payload's own checks accept: no consumer can tell
    them from what was sent."""
    return tuple(p for i, p in _changed_at(source, delivered) if i < delivered.payload_accepted)


def _payload_changes(source: LiveStream, delivered: LiveStream) -> tuple[tuple[str, str], ...]:
    """The same changes where the payload's own checks refused the stream they made (a
    record's byte is caught only by the trailer's checksum, later): only a consumer that runs
    those checks can tell them from what was sent. Empty when the payload accepted it all."""
    if delivered.payload_accepted >= delivered.ledger.count:
        return ()
    return tuple(p for _, p in _changed_at(source, delivered))


def _fired_kind(timeline: Timeline, number: int, kind: str = "inject_event") -> bool:
    """Whether fault ``kind`` fired on connection ``number``'s producer stream."""
    return any(
        r.name == kind and r.connection == number and r.direction == "downstream"
        for r in timeline.faults
    )


def _injected(source: LiveStream, delivered: LiveStream) -> tuple[str, ...]:
    """Messages the consumer's side decoded between the producer's, on a connection where an
    event was injected: the delivered stream is the sent one with insertions, so each message
    that is not the next one sent is one (an injected ping is found even where the producer
    sent a ping of the same bytes elsewhere)."""
    sent, found, next_sent = source.digests, [], 0
    for digest in delivered.digests:
        if next_sent < len(sent) and digest == sent[next_sent]:
            next_sent += 1
        else:
            found.append(digest)
    return tuple(found)


def _payload_added(source: LiveStream, delivered: LiveStream) -> tuple[str, ...]:
    """Whole messages the consumer's side decoded past every message the producer sent, on a
    stream the payload's own checks refused (an event after ``[DONE]``). Only additions after
    an intact copy of what was sent count: anything else changed the stream itself."""
    sent, got = source.digests, delivered.digests
    if len(got) <= len(sent) or got[: len(sent)] != sent:
        return ()
    if delivered.payload_accepted >= len(got):
        return ()
    return tuple(got[len(sent) :])


def _changed_at(source: LiveStream, delivered: LiveStream) -> list[tuple[int, tuple[str, str]]]:
    """(index, (sent, delivered)) of each message changed in place: decoded on both sides,
    of the same size, different bytes."""
    pairs = []
    for index, (sent, got) in enumerate(zip(source.digests, delivered.digests, strict=False)):
        if sent != got and source.sizes[index] == delivered.sizes[index]:
            pairs.append((index, (sent, got)))
    return pairs


def setup_problem(source: LiveStream) -> str:
    """The framing error of a stream that never got to its first message, if that is one;
    led by what the stream is instead when its first bytes show another HTTP version (the
    codec's own words then describe bytes of a protocol it does not speak)."""
    error = source.error
    if error is None or source.digests or error.code not in SETUP_ERRORS:
        return ""
    if error.code == ErrorCode.HTTP_STATUS:
        return error.detail  # "the service answered 404 Not Found: '{...}'"
    problem = f"{error.code.value}: {error.detail}" if error.detail else error.code.value
    other = _other_http(source.traits.framing, source.opening)
    return f"{other} ({problem})" if other else problem


#: HTTP/2 frame types a server's first frame can have (SETTINGS, or a GOAWAY refusing at once)
_HTTP2_OPENERS = frozenset({0x4, 0x7})


def _other_http(framing: str | None, opening: bytes) -> str:
    """An HTTP/1.x answer where gRPC (HTTP/2) was declared, or the reverse, named with its
    first line or frame; '' when the bytes are neither."""
    if framing == FramingName.GRPC and opening.startswith(b"HTTP/1."):
        line = opening.split(b"\r\n", 1)[0].decode("latin-1")
        return f"an HTTP/1.1 answer ({line!r}), not HTTP/2"
    http1 = framing in (FramingName.SSE, FramingName.WEBSOCKET, FramingName.NDJSON_HTTP)
    if http1 and len(opening) >= 9 and opening[0] == 0 and opening[3] in _HTTP2_OPENERS:
        return "an HTTP/2 answer (its first bytes are an HTTP/2 frame), not HTTP/1.1"
    return ""
