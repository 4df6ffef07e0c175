"""Run one fault alone on trio memory channels, with a fake locator and recorder.

``await run_fault(fault, feed)`` (under the ``autojump_clock`` fixture) or ``run_fault_sync``
(its own virtual clock: for Hypothesis) returns a ``Run``: every output item stamped with
``trio.current_time()`` (to the nanosecond), the time each input item was taken by the fault,
and the recorder's entries. ``feed`` items are sent at once, one after the other; ``(t, item)``
pairs are sent at virtual time ``t``. The input channel is unbuffered, so ``Run.taken`` shows
backpressure.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import trio
import trio.testing
from hypothesis import strategies as st

from harness.faults.base import (
    Boundary,
    Chunk,
    Close,
    Fault,
    Heartbeat,
    Item,
    ItemRx,
    LinkContext,
    Position,
    PositionError,
)

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

    def frame_span(self, index: int) -> tuple[int, int]:
        if not 1 <= index <= len(self.spans):
            raise PositionError(f"no frame {index}")
        return self.spans[index - 1]

    def length_field(self, index: int) -> tuple[int, int]:
        return self.frame_span(index)[0], self.width


@dataclass
class FakeRecorder:
    entries: list[tuple[str, int | None, str]] = field(default_factory=list)

    def fault(self, name: str, offset: int | None, detail: str) -> None:
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


async def run_fault(
    fault: Fault,
    feed: Feed,
    *,
    spans: Sequence[tuple[int, int]] = (),
    seed: int = 0,
    started_at: float = 0.0,
    cancel_at: float = math.inf,
) -> Run:
    """Feed ``feed`` through ``fault.pipe`` and collect what comes out (see the module doc);
    the pipe is cancelled at virtual time ``cancel_at`` (for faults that wait forever)."""
    recorder = FakeRecorder()
    ctx = LinkContext("downstream", FakeLocator(spans), recorder, random.Random(seed), started_at)
    in_tx, in_rx = trio.open_memory_channel[Item](0)
    out_tx, out_rx = trio.open_memory_channel[Item](0)
    out: list[tuple[float, Item]] = []
    taken: list[float] = []
    closed_at = math.inf

    async def produce() -> None:
        async with in_tx:
            for entry in feed:
                if isinstance(entry, tuple):
                    await trio.sleep_until(entry[0])
                item = entry[1] if isinstance(entry, tuple) else entry
                try:
                    await in_tx.send(item)
                except trio.BrokenResourceError:  # the pipe was cancelled and closed rx
                    return
                taken.append(now())

    async def consume(rx: ItemRx) -> None:
        nonlocal closed_at
        async for item in rx:
            out.append((now(), item))
        closed_at = now()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        nursery.start_soon(consume, out_rx)
        with trio.move_on_at(cancel_at):
            await fault.pipe(in_rx, out_tx, ctx)
    return Run(out, taken, recorder.entries, closed_at)


def now() -> float:
    """``trio.current_time()`` to the nanosecond, so that sums of decimal delays compare
    exactly (0.05 + 0.01 is 0.060000000000000005 in floats)."""
    return round(trio.current_time(), 9)


def run_fault_sync(
    fault: Fault, feed: Feed, *, spans: Sequence[tuple[int, int]] = (), seed: int = 0
) -> Run:
    """``run_fault`` in a fresh trio run on a virtual clock (for Hypothesis tests)."""
    clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(partial(run_fault, fault, feed, spans=spans, seed=seed), clock=clock)
