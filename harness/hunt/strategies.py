"""Hypothesis strategies over fault plans, aimed at the places consumers break. Pure.

A plan is drawn in the order its shrinking should prefer (Hypothesis shrinks the earliest
choices first, and every choice toward its first option): the fault kinds (fewest, simplest
first), then the stream (shortest first), then each fault's details: where it lands, how it
closes, how long it waits. Every option list starts with its simplest (or the scenario
default), so a shrunk plan says little more than it needs.

Where a fault lands is drawn from the stream's landmarks (``landmarks.py``): the first byte of a
frame, its last byte, the framing's bytes at either end of it (a length prefix, a line's LF, an
event's blank line), a multi-byte character with the byte to cut after, the bytes outside every
frame (the stream's end marker), a ``match`` text, and any offset. Timed faults are measured
against the consumer's incomplete-message timeout ``T``: stalls and pauses well below it or well
above it (never within half of it, so that a loaded machine cannot change the verdict), times
at whole multiples of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import assume
from hypothesis import strategies as st

from harness.faults import (
    BogusLength,
    Corrupt,
    DropFrame,
    DuplicateFrame,
    Kill,
    Latency,
    Merge,
    Reconnect,
    ReorderFrames,
    Slice,
    SlowConsumer,
    Split,
    Stall,
    Throttle,
)
from harness.faults.config import Fault
from harness.faults.heartbeat import HeartbeatKind
from harness.faults.items import CloseHow, Direction
from harness.faults.position import Position
from harness.hunt.landmarks import Frame, Landmarks, landmarks
from harness.hunt.plan import Plan, deadline_for, is_timed
from harness.link.locator import PreparedLocator, check_positions
from harness.link.prepared import prepare
from harness.link.reference import link_spec
from harness.scenario.model import (
    ConsumerConfig,
    EnvelopeConfig,
    FramingConfig,
    Link,
    MessagesConfig,
    TokensConfig,
)
from reference_impl.framing import FramingName
from reference_impl.link import LinkSpec
from reference_impl.payload import PayloadName
from reference_impl.payload.messages import MessagesSpec

#: fault kinds, simplest first, each with its weight (how often it is drawn)
KIND_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("split", 10),
    ("kill", 12),
    ("corrupt", 8),
    ("drop_frame", 6),
    ("duplicate_frame", 6),
    ("reorder_frames", 5),
    ("merge", 5),
    ("bogus_length", 5),
    ("reconnect", 6),
    ("stall", 7),
    ("slice", 3),
    ("slow_consumer", 3),
    ("latency", 2),
    ("throttle", 2),
)
#: kinds that can act on the consumer's bytes to the producer (byte offsets or times only)
UPSTREAM_KINDS = frozenset({"split", "kill", "corrupt", "stall"})
#: the heartbeat a stall may write on each framing that has one
HEARTBEATS: dict[str, HeartbeatKind] = {
    "sse": "sse-comment",
    "websocket": "websocket-ping",
    "grpc": "grpc-ping",
}
#: multiples of T a stall or a pause lasts: well above or well below the timeout
WAIT_FACTORS = (2.5, 0.5, 1.5, 0.2)
#: multiples of T a time position waits (never within T/2 of a wait's end)
TIME_FACTORS = (1.0, 2.0, 3.0)
#: how a corrupt fault changes bytes: XOR masks, then values (VT and FF are line breaks to
#: str.splitlines; a quote or a NUL breaks JSON text)
CHANGES: tuple[tuple[str, int], ...] = (
    ("mask", 0xFF),
    ("mask", 0x01),
    ("mask", 0x20),
    ("value", 0x0B),
    ("value", 0x0C),
    ("value", 0x22),
    ("value", 0x00),
)
#: characters of hunted message texts: ASCII, 2-, 3- and 4-byte characters, and characters
#: some line splitters take for line breaks (U+2028, NEL, VT, FF, the file separator)
TEXT_ALPHABET = 'ab "\\\u00e9\u20ac\U0001f680\u2028\u0085\x0b\x0c\x1c'
MAX_FAULTS = 4


@dataclass(frozen=True, slots=True)
class Space:
    """What a hunt draws plans for: the link the consumer speaks, and the search's bounds."""

    framing: FramingName
    payload: PayloadName
    profile: str = "openai"
    max_faults: int = 3
    #: the incomplete-message timeout of plans with timed faults, in milliseconds (T)
    timeout_ms: float = 500.0


def has_length_prefix(framing: str) -> bool:
    """Whether the framing puts a length prefix before each message (``bogus_length``)."""
    spec = LinkSpec(framing=framing, payload="messages", messages=MessagesSpec(1, 8))
    return prepare(spec).length_field(1) is not None


def kind_choices(space: Space) -> tuple[str, ...]:
    """Every kind repeated by its weight, simplest first (``sampled_from`` shrinks toward
    the first)."""
    prefixed = has_length_prefix(space.framing)
    return tuple(
        kind
        for kind, weight in KIND_WEIGHTS
        for _ in range(weight)
        if kind != "bogus_length" or prefixed
    )


# --- the stream ------------------------------------------------------------------------------


@st.composite
def links(draw: st.DrawFn, space: Space) -> Link:
    """The link, shortest stream first, the framing's defaults first."""
    framing_options = FramingConfig()
    if space.framing == "sse" and draw(st.booleans()):
        framing_options = replace(framing_options, sse_body="close")
    if space.framing == "websocket":
        binary, fragment = draw(st.booleans()), draw(st.integers(0, 32))
        framing_options = replace(framing_options, ws_text=not binary, ws_fragment_bytes=fragment)
    link = Link(framing=space.framing, payload=space.payload, framing_options=framing_options)
    if space.payload == "messages":
        if draw(st.booleans()):
            texts = draw(
                st.lists(
                    st.text(alphabet=TEXT_ALPHABET, min_size=1, max_size=12),
                    min_size=1,
                    max_size=4,
                )
            )
            return replace(link, messages=MessagesConfig(texts=tuple(texts)))
        count, size = draw(st.integers(1, 6)), draw(st.integers(16, 96))
        return replace(link, messages=MessagesConfig(count=count, size_bytes=size))
    if space.payload == "envelope":
        records, chunk = draw(st.integers(0, 8)), draw(st.integers(1, 4))
        return replace(link, envelope=EnvelopeConfig(records=records, chunk_records=chunk))
    count = draw(st.integers(1, 10))
    advertise, incomplete = draw(st.booleans()), draw(st.booleans())
    tokens = TokensConfig(
        profile=space.profile,  # type: ignore[arg-type]
        count=count,
        advertise_length=advertise,
        send_completion=not incomplete,
    )
    return replace(link, tokens=tokens)


# --- positions -------------------------------------------------------------------------------


def _frame(draw: st.DrawFn, marks: Landmarks) -> Frame:
    """A frame, counted from the start or from the end (the last frame is often the one)."""
    count = len(marks.frames)
    from_end, index = draw(st.booleans()), draw(st.integers(0, count - 1))
    return marks.frames[count - 1 - index if from_end else index]


def _time(draw: st.DrawFn, space: Space) -> Position:
    return Position(after_ms=draw(st.sampled_from(TIME_FACTORS)) * space.timeout_ms)


def byte_position(draw: st.DrawFn, marks: Landmarks) -> Position:
    """A byte position at a landmark of the stream."""
    aims: list[str] = []
    if marks.frames:
        aims += ["frame", "frame", "last", "head", "tail", "tail", "inside", "fraction"]
    if marks.chars:
        aims += ["char", "char"]
    aims.append("gap")
    if marks.matches:
        aims.append("match")
    aims.append("offset")
    aim = draw(st.sampled_from(aims))
    if aim in ("frame", "last", "head", "tail", "inside", "fraction"):
        frame = _frame(draw, marks)
        if aim == "frame":
            return Position(frame=frame.index)
        if aim == "fraction":
            return Position(frame=frame.index, fraction=draw(st.sampled_from((0.5, 0.25, 0.75))))
        if aim == "last":
            at = frame.length - 1
        elif aim == "head":
            at = draw(st.integers(0, max(frame.head, 1) - 1))
        elif aim == "tail":
            at = frame.length - 1 - draw(st.integers(0, max(frame.tail, 1) - 1))
        else:
            at = draw(st.integers(0, frame.length - 1))
        return Position(frame=frame.index, frame_offset=max(0, at))
    if aim == "char":
        char = draw(st.integers(1, len(marks.chars)))
        return Position(utf8_char=char, char_byte=draw(st.integers(1, marks.chars[char - 1] - 1)))
    if aim == "gap":
        start, end = draw(st.sampled_from(marks.gaps[::-1]))  # the stream's end first
        return Position(offset=draw(st.integers(start, end)))
    if aim == "match":
        return Position(match=draw(st.sampled_from(marks.matches)))
    return Position(offset=draw(st.integers(0, marks.stream_length)))


def any_position(draw: st.DrawFn, marks: Landmarks, space: Space) -> Position:
    """A byte position, or (less often) a time."""
    if draw(st.integers(0, 7)) == 7:
        return _time(draw, space)
    return byte_position(draw, marks)


def upstream_position(draw: st.DrawFn, marks: Landmarks, space: Space, timed: bool) -> Position:
    """Upstream only byte offsets exist (the consumer's request is not prepared)."""
    if timed and draw(st.booleans()):
        return _time(draw, space)
    return Position(offset=draw(st.integers(0, marks.request_length - 1)))


# --- faults ----------------------------------------------------------------------------------


def _place(
    draw: st.DrawFn, kind: str, marks: Landmarks, space: Space, *, byte_only: bool
) -> tuple[Position, Direction]:
    upstream = kind in UPSTREAM_KINDS and marks.request_length > 0
    if upstream and draw(st.integers(0, 7)) == 7:
        return upstream_position(draw, marks, space, not byte_only), "upstream"
    if byte_only:
        return byte_position(draw, marks), "downstream"
    return any_position(draw, marks, space), "downstream"


def _wait(draw: st.DrawFn, space: Space) -> float:
    return draw(st.sampled_from(WAIT_FACTORS)) * space.timeout_ms


def _positioned(
    draw: st.DrawFn, kind: str, marks: Landmarks, space: Space, connection: int
) -> Fault:
    """The faults placed at a position that may be a time."""
    at, direction = _place(draw, kind, marks, space, byte_only=False)
    if kind == "split":
        return Split(at=at, direction=direction, connection=connection)
    if kind in ("kill", "reconnect"):
        # each kind's default first: rst for kill, fin for reconnect
        hows: tuple[CloseHow, ...] = (
            ("rst", "fin", "half") if kind == "kill" else ("fin", "rst", "half")
        )
        how = draw(st.sampled_from(hows))
        cls = Kill if kind == "kill" else Reconnect
        return cls(at=at, how=how, direction=direction, connection=connection)
    if kind == "stall":
        duration = draw(st.sampled_from((*WAIT_FACTORS, None)))
        heartbeat = HEARTBEATS.get(space.framing) if draw(st.booleans()) else None
        return Stall(
            at=at,
            duration_ms=None if duration is None else duration * space.timeout_ms,
            heartbeat=heartbeat,
            heartbeat_interval_ms=space.timeout_ms / 4 if heartbeat else 1000.0,
            direction=direction,
            connection=connection,
        )
    assert kind == "slow_consumer", kind
    rate = draw(st.sampled_from((None, 20 * max(marks.largest_frame, 100))))
    return SlowConsumer(
        at=at,
        pause_ms=_wait(draw, space),
        rate_bytes_per_s=rate,
        direction=direction,
        connection=connection,
    )


def _framed(draw: st.DrawFn, kind: str, marks: Landmarks, connection: int) -> Fault:
    """The faults that name a whole frame."""
    assume(bool(marks.frames))
    frame = _frame(draw, marks)
    if kind == "drop_frame":
        return DropFrame(frame=frame.index, connection=connection)
    if kind == "duplicate_frame":
        return DuplicateFrame(frame=frame.index, connection=connection)
    if kind == "bogus_length":
        lengths = (frame.size + 1, 0, max(frame.size - 1, 0), 2**31, 2**32 - 1)
        length = draw(st.sampled_from(lengths))
        return BogusLength(frame=frame.index, length=length, connection=connection)
    assert kind == "reorder_frames", kind
    count = len(marks.frames)
    assume(count >= 2)
    other = (frame.index - 1 + draw(st.integers(1, count - 1))) % count + 1
    return ReorderFrames(frame=frame.index, with_frame=other, connection=connection)


def draw_fault(
    draw: st.DrawFn, kind: str, marks: Landmarks, space: Space, connection: int
) -> Fault:
    """One fault of ``kind`` on ``connection``, aimed at the stream's landmarks."""
    if kind in ("split", "kill", "reconnect", "stall", "slow_consumer"):
        return _positioned(draw, kind, marks, space, connection)
    if kind in ("drop_frame", "duplicate_frame", "bogus_length", "reorder_frames"):
        return _framed(draw, kind, marks, connection)
    if kind == "merge":
        at = byte_position(draw, marks)
        return Merge(at=at, count_frames=draw(st.integers(2, 4)), connection=connection)
    if kind == "corrupt":
        at, direction = _place(draw, kind, marks, space, byte_only=True)
        change, byte = draw(st.sampled_from(CHANGES))
        count = draw(st.integers(1, 3))
        mask, value = (byte, None) if change == "mask" else (0xFF, byte)
        return Corrupt(
            at=at,
            count_bytes=count,
            mask=mask,
            value=value,
            direction=direction,
            connection=connection,
        )
    if kind == "slice":
        return Slice(size_bytes=draw(st.integers(1, 16)), connection=connection)
    if kind == "latency":
        delay = draw(st.sampled_from((0.1, 0.2))) * space.timeout_ms
        jitter = draw(st.sampled_from((0.0, 0.1))) * space.timeout_ms
        return Latency(delay_ms=delay, jitter_ms=jitter, connection=connection)
    assert kind == "throttle", kind
    # 100 ms worth of bytes holds at least one whole frame: no message waits near T
    rate = draw(st.sampled_from((20, 10))) * max(marks.largest_frame, 100)
    return Throttle(rate_bytes_per_s=rate, connection=connection)


@st.composite
def plans(draw: st.DrawFn, space: Space) -> Plan:
    """A fault plan: 1 to ``space.max_faults`` faults on a link of ``space``."""
    kinds = draw(
        st.lists(st.sampled_from(kind_choices(space)), min_size=1, max_size=space.max_faults)
    )
    link = draw(links(space))
    prepared = prepare(link_spec(link))
    marks = landmarks(prepared)
    reconnects = kinds.count("reconnect")
    faults: list[Fault] = []
    cut = 0
    for kind in kinds:
        if kind == "reconnect":
            cut += 1
            connection = cut
        elif reconnects:
            connection = draw(st.sampled_from((1, 1, 2, 0)))
        else:
            connection = 1
        faults.append(draw_fault(draw, kind, marks, space, connection))
    consumer = ConsumerConfig(max_reconnects=reconnects)
    if is_timed(tuple(faults)):
        consumer = replace(consumer, incomplete_message_timeout_ms=space.timeout_ms)
    link = replace(link, consumer=consumer)
    assume(check_positions(faults, PreparedLocator(prepared)) is None)
    return Plan(link, tuple(faults), deadline_for(tuple(faults)))
