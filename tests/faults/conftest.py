"""Run one fault's stage alone on a virtual clock, with a fake locator and recorder.

``run_fault(fault, feed)`` returns a ``Run``: every output item stamped with the virtual time
it came out (to the nanosecond), the time each input item was taken by the stage, and the
recorder's entries.
``feed`` items are offered one after the other, each as soon as the one before was taken;
``(t, item)`` pairs are offered from virtual time ``t`` on. An item is taken only while the stage
is ``accepting``, so ``Run.taken`` shows backpressure. After the last item the source ends
(``End``). The clock jumps from event to event, as trio's autojump clock does for the proxy.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from hypothesis import strategies as st

from harness.errors import FieldError, PositionError, render_path
from harness.faults.config import Fault
from harness.faults.items import Boundary, Chunk, Close, End, Heartbeat, Item
from harness.faults.position import Position
from harness.faults.stage import Chain, LinkShape, StageContext

Feed = Sequence[Item | tuple[float, Item]]


@dataclass
class FakeLocator:
    """Frames at fixed ``spans`` (``[start, end)``); the length prefix is each frame's first
    ``width`` bytes. ``offset`` understands ``offset`` and ``frame`` positions only."""

    spans: Sequence[tuple[int, int]] = ()
    width: int = 4

    def offset(self, position: Position) -> int:
        if position.offset is not None:
            return position.offset
        if position.frame is None:
            raise PositionError("the fake locator knows offsets and frames only")
        start, end = self.frame_span(position.frame)
        if position.fraction is not None:
            return start + round(position.fraction * (end - start))
        return start + (position.frame_offset or 0)

    def not_before(self, position: Position) -> int:
        return self.offset(position)

    def frame_span(self, index: int) -> tuple[int, int]:
        if not 1 <= index <= len(self.spans):
            raise PositionError(f"no frame {index}")
        return self.spans[index - 1]

    def length_field(self, index: int) -> tuple[int, int]:
        return self.frame_span(index)[0], self.width


@dataclass
class FakeRecorder:
    entries: list[tuple[str, int | None, str]] = field(default_factory=list)

    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None:
        self.entries.append((name, offset, detail))


@dataclass
class Run:
    out: list[tuple[float, Item]]
    taken: list[float]
    entries: list[tuple[str, int | None, str]]
    #: when the fault closed its output (the end of the stream reached the writer)
    closed_at: float

    @property
    def items(self) -> list[Item]:
        return [item for _, item in self.out]

    @property
    def times(self) -> list[float]:
        return [t for t, _ in self.out]

    @property
    def data(self) -> bytes:
        """Every byte written to the consumer, heartbeats included."""
        return data_of(self.items)

    @property
    def boundaries(self) -> list[int]:
        """How many bytes had been written before each Boundary."""
        return boundaries_of(self.items)


def cut_points(size: int) -> st.SearchStrategy[list[int]]:
    """Hypothesis: where a producer's ``size`` bytes could be cut into reads."""
    return st.lists(st.integers(1, max(1, size - 1)), unique=True, max_size=size).map(sorted)


def newline_frames(*payloads: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """An NDJSON-like wire (each payload + LF) and each frame's span."""
    return _frames([p + b"\n" for p in payloads])


def prefixed_frames(*payloads: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """A length-prefixed wire (u32 big-endian + payload) and each frame's span."""
    return _frames([len(p).to_bytes(4, "big") + p for p in payloads])


def _frames(frames: list[bytes]) -> tuple[bytes, list[tuple[int, int]]]:
    spans, start = [], 0
    for frame in frames:
        spans.append((start, start + len(frame)))
        start += len(frame)
    return b"".join(frames), spans


def chunks(data: bytes, *cuts: int) -> list[Chunk]:
    """``data`` as chunks cut at the given offsets (a producer's reads)."""
    edges = [0, *cuts, len(data)]
    return [Chunk(data[a:b], a) for a, b in itertools.pairwise(edges) if b > a]


def data_of(items: Sequence[Item]) -> bytes:
    return b"".join(i.data for i in items if isinstance(i, Chunk | Heartbeat))


def boundaries_of(items: Sequence[Item]) -> list[int]:
    marks, seen = [], 0
    for item in items:
        if isinstance(item, Chunk | Heartbeat):
            seen += len(item.data)
        elif isinstance(item, Boundary):
            marks.append(seen)
    return marks


def closes_of(items: Sequence[Item]) -> list[tuple[int, Close]]:
    """Each Close with how many bytes were written before it."""
    found, seen = [], 0
    for item in items:
        if isinstance(item, Chunk | Heartbeat):
            seen += len(item.data)
        elif isinstance(item, Close):
            found.append((seen, item))
    return found


def run_fault(
    fault: Fault,
    feed: Feed,
    *,
    spans: Sequence[tuple[int, int]] = (),
    seed: int = 0,
    started_at: float = 0.0,
    cancel_at: float = math.inf,
    shape: LinkShape | None = None,
) -> Run:
    """Feed ``feed`` through ``fault``'s stage and collect what comes out (see the module doc);
    the run stops at virtual time ``cancel_at`` (for faults that wait forever)."""
    recorder = FakeRecorder()
    ctx = StageContext("downstream", FakeLocator(spans), recorder, random.Random(seed), started_at)
    if shape is not None:
        ctx.shape = shape
    sim = _Simulation(Chain([fault.stage(ctx)]), feed)
    sim.run(cancel_at)
    return Run(sim.out, sim.taken, recorder.entries, sim.closed_at)


@dataclass
class _Simulation:
    """The proxy's loop for one direction, on a virtual clock: poll what is due, offer the next
    item while the chain accepts, else jump to the next event."""

    chain: Chain
    feed: Feed
    now: float = 0.0
    out: list[tuple[float, Item]] = field(default_factory=list)
    taken: list[float] = field(default_factory=list)
    closed_at: float = math.inf
    _next: int = 0
    _ready: float = 0.0  # when the next item is offered

    def run(self, cancel_at: float) -> None:
        for _ in range(100_000):
            wake = self.chain.wake_at
            offered = self._offered() if self.chain.accepting else None
            if wake is not None and wake <= self.now:
                self._emit(self.chain.poll(self.now))
            elif offered is not None and offered <= self.now:
                self._take()
            else:
                upcoming = [t for t in (wake, offered) if t is not None and t > self.now]
                if not upcoming or min(upcoming) >= cancel_at:
                    break
                self.now = min(upcoming)
        if math.isinf(self.closed_at) and math.isfinite(cancel_at):
            self.closed_at = cancel_at

    def _offered(self) -> float | None:
        """When the next input (or the end) is offered; None after the end."""
        if self._next > len(self.feed):
            return None
        if self._next == len(self.feed):
            return self._ready
        entry = self.feed[self._next]
        return max(entry[0], self._ready) if isinstance(entry, tuple) else self._ready

    def _take(self) -> None:
        if self._next == len(self.feed):
            item: Item = End()
        else:
            entry = self.feed[self._next]
            item = entry[1] if isinstance(entry, tuple) else entry
            self.taken.append(now(self.now))
        self._next += 1
        self._ready = self.now
        self._emit(self.chain.pipe(item, self.now))

    def _emit(self, items: list[Item]) -> None:
        for item in items:
            if not math.isinf(self.closed_at):
                return
            if isinstance(item, Close | End):
                self.closed_at = now(self.now)
            if not isinstance(item, End):
                self.out.append((now(self.now), item))


def now(t: float) -> float:
    """``t`` to the nanosecond, so that sums of decimal delays compare exactly (0.05 + 0.01 is
    0.060000000000000005 in floats)."""
    return round(t, 9)


@contextmanager
def raises_field(path: str) -> Iterator[None]:
    """The block raises ``FieldError`` for the key ``path`` (``"at.frame"``): errors are tested
    by where they point, not by their wording."""
    with pytest.raises(FieldError) as caught:
        yield
    assert render_path(caught.value.path) == path
