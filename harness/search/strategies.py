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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from hypothesis import assume, reject
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.faults import fault_class, hunted_kinds
from harness.faults.config import BaseFault, Fault
from harness.faults.effects import MESSAGE_ORDER, REWRITES, Effect
from harness.faults.heartbeat import HeartbeatKind, framing_heartbeat
from harness.faults.hunted import WAIT_FACTORS, FrameMark
from harness.faults.items import Direction
from harness.faults.position import Position
from harness.hunt.landmarks import Frame, Landmarks, landmarks
from harness.hunt.plan import Plan, deadline_for, is_timed, reconnects
from harness.hunt.visible import undetectable
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
from reference_impl.link.spec import LinkSpec
from reference_impl.payload import PayloadName
from reference_impl.payload.detection import detection
from reference_impl.payload.messages import MessagesSpec
from reference_impl.payload.tokens import TokenStreamSpec

#: where a byte position aims, simplest first, each as often as it is listed
AIMS = (
    "frame",
    "frame",
    "last",
    "head",
    "tail",
    "tail",
    "inside",
    "fraction",
    "char",
    "char",
    "value",
    "value",
    "gap",
    "match",
    "offset",
)
#: the fractions of a frame a ``fraction`` position takes
FRACTIONS = (0.5, 0.25, 0.75)
#: the range of the numbers a position's choices are read from (modulo what they pick from)
WIDE = 2**16 - 1
#: multiples of T a time position waits (never within T/2 of a wait's end)
TIME_FACTORS = (1.0, 2.0, 3.0)
#: characters of hunted message texts: ASCII, 2-, 3- and 4-byte characters, and characters
#: some line splitters take for line breaks (U+2028, NEL, VT, FF, the file separator)
TEXT_ALPHABET = 'ab "\\\u00e9\u20ac\U0001f680\u2028\u0085\x0b\x0c\x1c'
MAX_FAULTS = 4
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Space:
    """What a hunt draws plans for: the link the consumer speaks, and the search's bounds."""

    framing: FramingName
    payload: PayloadName
    profile: str = "openai"
    max_faults: int = 3
    #: the incomplete-message timeout of plans with timed faults, in milliseconds (T)
    timeout_ms: float = 500.0


def pick(draw: st.DrawFn, options: Sequence[T]) -> T:
    """One of ``options``, from a number read modulo their count: near uniform where
    Hypothesis's own choice leans on the first options, and still shrinking to the first."""
    return options[draw(st.integers(0, WIDE)) % len(options)]


def between(draw: st.DrawFn, low: int, high: int) -> int:
    """An integer in ``[low, high]``, as ``pick`` picks (shrinks to ``low``)."""
    return low + draw(st.integers(0, WIDE)) % (high - low + 1)


def has_length_prefix(framing: str) -> bool:
    """Whether the framing puts a length prefix before each message (``bogus_length``)."""
    spec = LinkSpec(framing=framing, payload="messages", messages=MessagesSpec(1, 8))
    return prepare(spec).length_field(1) is not None


def kind_choices(space: Space) -> tuple[str, ...]:
    """Every hunted kind repeated by its weight, simplest first (``sampled_from`` shrinks
    toward the first): those that rewrite a length field only where the framing has one,
    those that lose, repeat or swap messages only where the payload declares it can see that
    (``reference_impl.payload.detection``) whatever the drawn link's settings: a fault no
    consumer can see tests nothing."""
    prefixed = has_length_prefix(space.framing)
    # the weakest token settings a plan may draw: no length hint, no completion signal
    weakest = TokenStreamSpec(space.profile, (), advertise_length=False, send_completion=False)
    seen = detection(space.payload, weakest)
    chosen = []
    for cls in hunted_kinds():
        hunt = cls.hunt
        assert hunt is not None
        if (hunt.needs_length_field and not prefixed) or (
            not all(seen.detects(effect) for effect in cls.effects & MESSAGE_ORDER)
        ):
            continue
        chosen += [cls.kind] * hunt.weight
    return tuple(chosen)


# --- the stream ------------------------------------------------------------------------------


def clean_link(space: Space) -> Link:
    """A short link of ``space`` with every setting at its default: the preflight's."""
    link = Link(framing=space.framing, payload=space.payload)
    if space.payload == "messages":
        return replace(link, messages=MessagesConfig(count=3, size_bytes=32))
    if space.payload == "envelope":
        return replace(link, envelope=EnvelopeConfig(records=4, chunk_records=2))
    profile = space.profile
    return replace(link, tokens=TokensConfig(profile=profile, count=5))  # type: ignore[arg-type]


@st.composite
def links(draw: st.DrawFn, space: Space) -> Link:
    """The link, shortest stream first, the framing's defaults first."""
    framing_options = FramingConfig()
    if space.framing in (FramingName.SSE, FramingName.NDJSON_HTTP) and draw(st.booleans()):
        framing_options = replace(framing_options, sse_body="close")
    if space.framing == FramingName.WEBSOCKET:
        binary, fragment = draw(st.booleans()), between(draw, 0, 32)
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
        count, size = between(draw, 1, 6), between(draw, 16, 96)
        return replace(link, messages=MessagesConfig(count=count, size_bytes=size))
    if space.payload == "envelope":
        records, chunk = between(draw, 1, 8), between(draw, 1, 4)
        return replace(link, envelope=EnvelopeConfig(records=records, chunk_records=chunk))
    count = between(draw, 1, 10)
    advertise, incomplete = draw(st.booleans()), draw(st.booleans())
    tokens = TokensConfig(
        profile=space.profile,  # type: ignore[arg-type]
        count=count,
        advertise_length=advertise,
        send_completion=not incomplete,
    )
    return replace(link, tokens=tokens)


# --- positions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """Where a fault may act on the downstream stream: offsets in ``(after, before)``. A cut
    comes after the faults drawn before it on its connection; a fault drawn after a cut comes
    before it (a fault past a cut could never happen)."""

    after: int = -1
    before: int | None = None

    def admits(self, offset: int) -> bool:
        return self.after < offset and (self.before is None or offset < self.before)

    def admits_frame(self, frame: Frame) -> bool:
        return self.after < frame.start and (self.before is None or frame.end <= self.before)


ANYWHERE = Window()


def _nearest(count: int, index: int, admitted: Callable[[int], bool]) -> int:
    """``index`` if admitted, else the nearest admitted index (later first); ``assume``s one."""
    for distance in range(count):
        for candidate in (index + distance, index - distance):
            if 0 <= candidate < count and admitted(candidate):
                return candidate
    reject()


def _frame(draw: st.DrawFn, marks: Landmarks, window: Window = ANYWHERE) -> Frame:
    """A frame, counted from the start or from the end (the last frame is often the one),
    moved to the nearest one inside ``window``. Drawn over every frame, so that the same
    choices name the same frame when the window changes (an earlier fault shrunk away)."""
    return _frame_of(marks, window, draw(st.booleans()), draw(st.integers(0, WIDE)))


def _frame_of(marks: Landmarks, window: Window, from_end: bool, number: int) -> Frame:
    frames = marks.frames
    assume(bool(frames))
    count = len(frames)
    index = number % count
    index = _nearest(
        count, count - 1 - index if from_end else index, lambda i: window.admits_frame(frames[i])
    )
    return frames[index]


def _time(draw: st.DrawFn, space: Space) -> Position:
    return Position(after_ms=pick(draw, TIME_FACTORS) * space.timeout_ms)


def byte_position(draw: st.DrawFn, marks: Landmarks, window: Window = ANYWHERE) -> Position:
    """A byte position at a landmark of the stream, inside ``window``.

    Every aim takes the same four choices (the aim, a flag, two numbers read modulo what they
    pick from), so the shrinker, which prefers fewer choices, is not drawn toward one aim, and
    moves to the simplest (the first frame's first byte) only by lowering them. The numbers
    pick over the whole stream and the pick is then moved into the window, so that the same
    choices mean the same place when the window changes."""
    aim, flag = pick(draw, AIMS), draw(st.booleans())
    first_number, second_number = draw(st.integers(0, WIDE)), draw(st.integers(0, WIDE))
    last = marks.stream_length if window.before is None else window.before - 1
    first = window.after + 1
    assume(first <= last)
    frames = any(window.admits_frame(f) for f in marks.frames)
    chars = [window.admits(o) and window.admits(o + w - 1) for o, w in marks.chars]
    ends = marks.gaps[::-1]  # the stream's end first
    gaps = [max(a, first) <= min(b, last) for a, b in ends]
    matches = [window.admits(offset) for _, offset in marks.matches]
    values = [window.admits(offset) for offset in marks.values]
    available = {
        "char": any(chars),
        "value": any(values),
        "gap": any(gaps),
        "match": any(matches),
        "offset": True,
    }
    if not available.get(aim, frames):  # the same choice means the same aim whatever
        aim = "frame" if frames else "offset"  # the stream: the shrinker can shorten it
    if aim in ("frame", "last", "head", "tail", "inside", "fraction"):
        frame = _frame_of(marks, window, flag, first_number)
        if aim == "frame":
            return Position(frame=frame.index)
        if aim == "fraction":
            return Position(frame=frame.index, fraction=FRACTIONS[second_number % len(FRACTIONS)])
        at = {
            "last": frame.length - 1,
            "head": second_number % max(frame.head, 1),
            "tail": frame.length - 1 - second_number % max(frame.tail, 1),
            "inside": second_number % frame.length,
        }[aim]
        return Position(frame=frame.index, frame_offset=max(0, at))
    if aim == "char":
        index = _nearest(len(chars), first_number % len(chars), chars.__getitem__)
        width = marks.chars[index][1]
        return Position(utf8_char=index + 1, char_byte=1 + second_number % (width - 1))
    if aim == "value":  # a few bytes into a checked value: a digit, a hex digit, a letter
        index = _nearest(len(values), first_number % len(values), values.__getitem__)
        offset = marks.values[index] + second_number % 4
        return Position(offset=min(max(offset, first), last))
    if aim == "match":
        index = _nearest(len(matches), first_number % len(matches), matches.__getitem__)
        return Position(match=marks.matches[index][0])
    if aim == "gap":
        index = _nearest(len(ends), first_number % len(ends), gaps.__getitem__)
        start, end = ends[index]
        offset = start + second_number % (end - start + 1)
        return Position(offset=min(max(offset, first), end, last))
    offset = second_number % (marks.stream_length + 1)
    return Position(offset=min(max(offset, first), last))


def any_position(
    draw: st.DrawFn, marks: Landmarks, space: Space, window: Window = ANYWHERE
) -> Position:
    """A byte position (inside ``window``), or (less often) a time: a time takes one choice
    more than a byte position, so the shrinker prefers the byte position when both fail."""
    timed = between(draw, 0, 7) == 7
    position = byte_position(draw, marks, window)
    return _time(draw, space) if timed else position


def upstream_position(draw: st.DrawFn, marks: Landmarks, space: Space, timed: bool) -> Position:
    """Upstream only byte offsets exist (the consumer's request is not prepared)."""
    if timed and draw(st.booleans()):
        return _time(draw, space)
    return Position(offset=between(draw, 0, marks.request_length - 1))


# --- faults ----------------------------------------------------------------------------------


def _place(
    draw: st.DrawFn,
    upstream_ok: bool,
    marks: Landmarks,
    space: Space,
    window: Window,
    *,
    byte_only: bool,
) -> tuple[Position, Direction]:
    upstream = upstream_ok and marks.request_length > 0
    if upstream and between(draw, 0, 7) == 7:
        byte_position(draw, marks)  # unused: upstream takes more choices, so shrinks less
        return upstream_position(draw, marks, space, not byte_only), "upstream"
    if byte_only:
        return byte_position(draw, marks, window), "downstream"
    return any_position(draw, marks, space, window), "downstream"


@dataclass(frozen=True, slots=True)
class _Drawer:
    """The search's choices for one fault (``harness.faults.hunted.Draw``), aimed at the
    stream's landmarks inside ``window``."""

    draw: st.DrawFn
    marks: Landmarks
    space: Space
    window: Window
    #: the fault's kind may act on the consumer's bytes
    upstream: bool

    @property
    def timeout_ms(self) -> float:
        return self.space.timeout_ms

    @property
    def largest_frame(self) -> int:
        return self.marks.largest_frame

    @property
    def heartbeat(self) -> HeartbeatKind | None:
        return framing_heartbeat(self.space.framing)

    def pick(self, options: Sequence[T]) -> T:
        return pick(self.draw, options)

    def between(self, low: int, high: int) -> int:
        return between(self.draw, low, high)

    def boolean(self) -> bool:
        return self.draw(st.booleans())

    def place(self, *, byte_only: bool) -> tuple[Position, Direction]:
        return _place(
            self.draw, self.upstream, self.marks, self.space, self.window, byte_only=byte_only
        )

    def byte_position(self) -> Position:
        return byte_position(self.draw, self.marks, self.window)

    def frame(self) -> Frame:
        return _frame(self.draw, self.marks, self.window)

    def other_frame(self, than: FrameMark) -> int:
        others = [f for f in self.marks.frames if f.index != than.index]
        assume(bool(others))
        chosen = self.draw(st.integers(0, WIDE)) % len(others)
        admitted = lambda i: self.window.admits_frame(others[i])  # noqa: E731
        return others[_nearest(len(others), chosen, admitted)].index

    def wait_ms(self) -> float:
        return pick(self.draw, WAIT_FACTORS) * self.space.timeout_ms


def draw_fault(
    draw: st.DrawFn,
    kind: str,
    marks: Landmarks,
    space: Space,
    connection: int,
    window: Window = ANYWHERE,
) -> Fault:
    """One fault of ``kind`` on ``connection``, drawn by its class (``hunted``), aimed at the
    stream's landmarks (inside ``window``, if it acts at a place)."""
    cls = _hunted_class(kind)
    assert cls.hunt is not None
    return cls.hunted(_Drawer(draw, marks, space, window, cls.hunt.upstream), connection)


def _hunted_class(kind: str) -> type[BaseFault]:
    cls = fault_class(kind)
    assert cls is not None and cls.hunt is not None, f"{kind} is not a hunted fault"
    return cls


# --- plans -----------------------------------------------------------------------------------


def _at(fault: Fault) -> Position | None:
    at = getattr(fault, "at", None)
    return at if isinstance(at, Position) else None


def _start(fault: Fault, locator: PreparedLocator) -> int | None:
    """The offset where a downstream fault first acts (None: a time, or not placed by bytes;
    0: every byte)."""
    at = _at(fault)
    try:
        if at is not None:
            return None if at.is_time else locator.offset(at)
        frames = [getattr(fault, key, None) for key in ("frame", "with_frame")]
        starts = [locator.frame_span(f)[0] for f in frames if isinstance(f, int)]
    except HarnessError:  # not placeable: check_positions rejects the plan
        return None
    return min(starts, default=0)


def _on(faults: Sequence[Fault], connection: int) -> list[Fault]:
    """The downstream faults acting on ``connection`` (a fault on every connection, 0,
    counts as one on the first)."""
    wanted = {connection, 0} if connection == 1 else {connection}
    return [f for f in faults if f.direction == "downstream" and f.connection in wanted]


def window_for(
    kind: str, connection: int, earlier: Sequence[Fault], locator: PreparedLocator
) -> Window:
    """Where a fault of ``kind`` drawn after ``earlier`` may act on its connection."""
    mine = _on(earlier, connection or 1)
    cuts = [c for f in mine if f.ends_connection() and (c := _start(f, locator)) is not None]
    before = min(cuts, default=None)
    if Effect.TRUNCATION not in _hunted_class(kind).effects:
        return Window(before=before)
    assume(not cuts)  # a second cut of one connection could never happen
    starts = [s for f in mine if (s := _start(f, locator)) is not None]
    return Window(after=max(starts, default=-1))


def plausible(faults: tuple[Fault, ...], locator: PreparedLocator) -> bool:
    """Whether every fault can fire: none placed after a cut of its connection (or a stall
    without end), none in a dropped frame, none that needs a byte after the stream's last,
    none on a connection no reconnect opens; a time position only with a fault that keeps the
    stream going that long. A plan that breaks this is not wrong, only wasted: its reference
    run would be inconclusive."""
    timed = [f for f in faults if (at := _at(f)) is not None and at.is_time]
    # a fault that keeps the stream going long enough for a time position to come
    stretched = any(f.timed and not ((at := _at(f)) is not None and at.is_time) for f in faults)
    if timed and not stretched:
        return False
    if max((f.connection for f in faults), default=1) > 1 + reconnects(faults):
        return False
    dropped = {frame for f in faults if (frame := _lost_frame(f)) is not None}
    inside = [locator.link.spans[d - 1] for d in dropped if d <= len(locator.link.spans)]
    for connection in {f.connection for f in faults if f.direction == "downstream"} - {0}:
        mine = [f for f in faults if f.direction == "downstream" and f.connection == connection]
        starts = {id(f): _start(f, locator) for f in mine}
        cuts = [c for f in mine if f.ends_connection() and (c := starts[id(f)]) is not None]
        if len(cuts) > 1:
            return False
        cut = cuts[0] if cuts else None
        for fault in mine:
            start = starts[id(fault)]
            if start is None or fault.ends_connection():
                continue
            if start >= locator.link.stream_length or (cut is not None and start >= cut):
                return False
            named = {getattr(fault, key, None) for key in ("frame", "with_frame")}
            if _lost_frame(fault) is None and (named & dropped):
                return False
            if _at(fault) is not None and any(a <= start < b for a, b in inside):
                return False
    return True


def _lost_frame(fault: Fault) -> int | None:
    """The frame a fault that loses a whole message takes away (None: it loses none)."""
    frame = getattr(fault, "frame", None)
    return frame if Effect.LOSS in fault.effects and isinstance(frame, int) else None


@st.composite
def fault_chain(
    draw: st.DrawFn,
    space: Space,
    marks: Landmarks,
    locator: PreparedLocator,
    earlier: tuple[Fault, ...] = (),
) -> tuple[Fault, ...]:
    """The faults after ``earlier``: "one more?", then the kind, its details and (nested
    inside this span) the chain of the faults after it. Nested, so that Hypothesis drops any
    one fault by putting the chain after it in its place (its ``pass_to_descendant``); the
    answer to "one more?" is ignored for the first fault and at ``max_faults``."""
    more = draw(st.booleans())
    if earlier and (not more or len(earlier) >= space.max_faults):
        return ()
    kind = pick(draw, kind_choices(space))
    done = reconnects(earlier)
    if _hunted_class(kind).reconnects:
        connection = done + 1  # the n-th reconnect cuts connection n
    elif done:
        connection = pick(draw, (1, 1, 2, 0))
    else:
        connection = 1
    window = window_for(kind, connection, earlier, locator)
    fault = draw_fault(draw, kind, marks, space, connection, window)
    return (fault, *draw(fault_chain(space, marks, locator, (*earlier, fault))))


@st.composite
def plans(draw: st.DrawFn, space: Space) -> Plan:
    """A fault plan: 1 to ``space.max_faults`` faults on a link of ``space``. The stream is
    drawn first (every position depends on it), then the faults (``fault_chain``)."""
    link = draw(links(space))
    prepared = prepare(link_spec(link))
    marks = landmarks(prepared)
    locator = PreparedLocator(prepared)
    faults = list(draw(fault_chain(space, marks, locator)))
    consumer = ConsumerConfig(max_reconnects=reconnects(tuple(faults)))
    if is_timed(tuple(faults)):
        consumer = replace(consumer, incomplete_message_timeout_ms=space.timeout_ms)
    link = replace(link, consumer=consumer)
    assume(check_positions(faults, locator) is None)
    assume(plausible(tuple(faults), locator))
    # a re-framing no consumer can detect, which the judge still calls I1: a test of nothing
    assume(not (any(f.effects & REWRITES for f in faults) and undetectable(prepared, faults)))
    return Plan(link, tuple(faults), deadline_for(tuple(faults)))
