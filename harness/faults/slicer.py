"""``slicer``: cut every read into smaller writes, Toxiproxy's way (``slicer``)."""

from __future__ import annotations

import functools
import itertools
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_BYTES, MAX_DURATION_MS
from harness.faults.config import BaseFault
from harness.faults.items import Chunk, Item
from harness.faults.stage import BaseStage, Stage, StageContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Slicer(BaseFault):
    """Cut each read into slices written one by one, ``delay_ms`` apart (and ``delay_ms`` after
    the last, before the next read's first), as Toxiproxy's slicer does: a span stays whole when
    it has at most ``average_bytes + variation_bytes`` bytes, else it is halved, the cut moved
    by a seeded draw in ``[-variation_bytes, variation_bytes)``, and both halves cut again. So
    slices are at most ``average_bytes + variation_bytes`` long, mostly between half of that and
    all of it. Unlike ``slice``, nothing makes the consumer read the slices apart: without a
    delay its reads may merge them. A span of one byte is never cut (Toxiproxy recurses forever
    on ``average_bytes + variation_bytes < 1``), and a cut stays inside its span.

    - ``average_bytes``: the size around which slices are made.
    - ``variation_bytes``: how far a cut may move from the middle.
    - ``delay_ms``: pause after each slice, in milliseconds (Toxiproxy's ``delay`` is in us).
    """

    kind: ClassVar[str] = "slicer"
    transparent: ClassVar[bool] = True
    average_bytes: Annotated[int, Ge(0), Le(MAX_BYTES)]
    variation_bytes: Annotated[int, Ge(0), Le(MAX_BYTES)] = 0
    delay_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] = 0.0

    def cuts(self, length: int, rng: random.Random) -> list[int]:
        """The slice ends of a read of ``length`` bytes, in order (the last is ``length``)."""
        if self.variation_bytes == 0:  # no draw: the same cuts for every read of a length
            return list(_even_edges(length, self.average_bytes)[1:])
        return self._drawn_cuts(length, rng)

    def _drawn_cuts(self, length: int, rng: random.Random) -> list[int]:
        largest = max(1, self.average_bytes + self.variation_bytes)
        variation = self.variation_bytes
        ends: list[int] = []
        spans = [(0, length)]  # a stack: the left half is cut first, as in the recursion
        while spans:
            start, end = spans.pop()
            if end - start <= largest:
                ends.append(end)
                continue
            middle = start + (end - start) // 2
            if variation > 0:
                middle += rng.randrange(2 * variation) - variation
            middle = min(max(middle, start + 1), end - 1)
            spans += [(middle, end), (start, middle)]
        return ends

    def waits(self) -> bool:
        """Its slices wait ``delay_ms`` apart: a delay is wall-clock time."""
        return self.delay_ms > 0

    def stage(self, ctx: StageContext) -> Stage:
        return SlicerStage(self, ctx)

    def edges(self, length: int, rng: random.Random) -> Sequence[int]:
        """0 and the slice ends (``cuts``): where each slice starts and the last ends."""
        if self.variation_bytes == 0:
            return _even_edges(length, self.average_bytes)
        return [0, *self._drawn_cuts(length, rng)]


@functools.lru_cache(maxsize=64)
def _even_edges(length: int, average_bytes: int) -> tuple[int, ...]:
    """``edges`` without variation, kept for the lengths that come again (a bulk transfer's
    reads are mostly full): the halving loop cost a 64-byte slice more than its write."""
    fault = Slicer(average_bytes=average_bytes)
    return (0, *fault._drawn_cuts(length, random.Random(0)))  # (no draw without variation)


class SlicerStage(BaseStage):
    def __init__(self, fault: Slicer, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self._queue: deque[Item] = deque()
        self._next_at = 0.0  # when the next slice may go

    def pipe(self, item: Item, now: float) -> list[Item]:
        if isinstance(item, Chunk) and len(item.data) > 1:
            data, offset = item.data, item.offset
            edges = self.fault.edges(len(data), self.ctx.rng)
            pieces = [Chunk(data[a:b], offset + a) for a, b in itertools.pairwise(edges)]
            if len(pieces) > 1:
                detail = f"{len(data)} bytes in {len(pieces)} slices"
                self.ctx.recorder.fault(Slicer.kind, offset, detail, now)
            self._queue.extend(pieces)
        else:
            self._queue.append(item)
        return self.poll(now)

    def poll(self, now: float) -> list[Item]:
        delay = self.fault.delay_ms / 1000
        out: list[Item] = []
        if not delay:  # nothing paces the slices: all of them go now
            out.extend(self._queue)
            self._queue.clear()
            return out
        while self._queue:
            if not isinstance(self._queue[0], Chunk):
                out.append(self._queue.popleft())
                continue
            if now < self._next_at:
                break
            out.append(self._queue.popleft())
            if delay:
                self._next_at = now + delay
        return out

    @property
    def wake_at(self) -> float | None:
        return self._next_at if self._queue else None

    @property
    def accepting(self) -> bool:
        return not self._queue

    def release(self, now: float) -> list[Item]:
        held = list(self._queue)
        self._queue.clear()
        return held

    def retune(self, fault: object) -> bool:
        if not isinstance(fault, Slicer):
            return False
        self.fault = fault  # the slices of the read in hand keep their sizes
        return True
