"""``slice``: cut the whole stream into pieces, each read separately by the consumer."""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, ClassVar, Self

from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_BYTES, MAX_DURATION_MS
from harness.errors import FieldError
from harness.faults.config import BaseFault
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Boundary, Chunk, End, Item
from harness.faults.stage import BaseStage, Stage, StageContext

Size = Annotated[int, Ge(1), Le(MAX_BYTES)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Slice(BaseFault):
    """Cut the stream into pieces and make the consumer read each piece separately (a read
    boundary between pieces): fixed pieces of ``size_bytes`` (1 = byte at a time), or random
    sizes between ``min_bytes`` and ``max_bytes`` drawn from the case seed. Cuts sit at fixed
    stream offsets, so the pieces do not depend on how the producer's writes were chunked.

    - ``size_bytes``: every piece this many bytes (the last may be shorter).
    - ``min_bytes``: smallest random piece (set with ``max_bytes``, instead of ``size_bytes``).
    - ``max_bytes``: largest random piece.
    - ``delay_ms``: pause between pieces, in milliseconds (default 0).
    - ``paced``: true (default): before each piece the proxy waits until the consumer has read
      everything before it, so every cut is a read boundary the consumer sees (the fidelity
      promise). false: the pieces are written back to back, one write each, like toxiproxy's
      slicer: much faster, but the consumer's kernel may merge pieces into one read.
    """

    kind: ClassVar[str] = "slice"
    transparent: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=10, weight=3)
    size_bytes: Size | None = None
    min_bytes: Size | None = None
    max_bytes: Size | None = None
    delay_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] = 0.0
    paced: bool = True

    def _validate(self) -> None:
        if (self.size_bytes, self.min_bytes, self.max_bytes) == (None, None, None):
            raise FieldError("required (or min_bytes and max_bytes)", path=("size_bytes",))
        if self.size_bytes is not None:
            if (self.min_bytes, self.max_bytes) != (None, None):
                raise FieldError(
                    "set size_bytes or min_bytes/max_bytes, not both", path=("size_bytes",)
                )
        elif self.min_bytes is None or self.max_bytes is None:
            missing = "min_bytes" if self.min_bytes is None else "max_bytes"
            raise FieldError("required (or set size_bytes instead)", path=(missing,))
        elif self.max_bytes < self.min_bytes:
            raise FieldError(
                f"must be >= min_bytes ({self.min_bytes}) (got {self.max_bytes})",
                path=("max_bytes",),
            )

    def cuts(self, rng: random.Random) -> Iterator[int]:
        """The stream offsets where pieces end (pure: sizes drawn in order from ``rng``)."""
        if self.size_bytes is not None:
            return itertools.count(self.size_bytes, self.size_bytes)
        low, high = self.min_bytes or 1, self.max_bytes or 1  # both set: checked above
        return itertools.accumulate(rng.randint(low, high) for _ in itertools.count())

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        return cls(size_bytes=draw.between(1, 16), connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return SliceStage(self, ctx)


class SliceStage(BaseStage):
    """Hands chunks on up to the next cut; a boundary waits for the byte after a cut (one after
    the last byte would be a cut nobody can observe). With ``delay_ms`` the piece after a
    boundary waits, and nothing more is read meanwhile."""

    def __init__(self, fault: Slice, ctx: StageContext) -> None:
        self.fault, self.ctx = fault, ctx
        self._cuts = fault.cuts(ctx.rng)
        self._cut = next(self._cuts)
        self._armed: int | None = None  # a cut whose boundary waits for the next item
        self._queue: deque[Item] = deque()
        self._resume_at = 0.0

    def pipe(self, item: Item, now: float) -> list[Item]:
        self._queue.append(item)
        return self._drain(now)

    def poll(self, now: float) -> list[Item]:
        return self._drain(now)

    @property
    def wake_at(self) -> float | None:
        return self._resume_at if self._queue else None

    @property
    def accepting(self) -> bool:
        return not self._queue

    def release(self, now: float) -> list[Item]:
        held = list(self._queue)
        self._queue.clear()
        return held

    def _drain(self, now: float) -> list[Item]:
        out: list[Item] = []
        while self._queue and now >= self._resume_at:
            item = self._queue[0]
            if self._armed is not None:
                cut, self._armed = self._armed, None
                if not isinstance(item, End):
                    self._cut_at(cut, now, out)
                    if self.fault.delay_ms:
                        self._resume_at = now + self.fault.delay_ms / 1000
                        continue
            if not isinstance(item, Chunk):
                out.append(self._queue.popleft())
                continue
            if self._fixed_back_to_back:
                self._queue.popleft()
                self._fixed_pieces(item, now, out)
                continue
            rest = self._pieces(item, now, out)
            if rest is None:
                self._queue.popleft()
            else:
                self._queue[0] = rest
        return out

    @property
    def _fixed_back_to_back(self) -> bool:
        """Fixed pieces, unpaced, no delay: the cuts of a read are one ``range``."""
        fault = self.fault
        return fault.size_bytes is not None and not fault.paced and not fault.delay_ms

    def _fixed_pieces(self, chunk: Chunk, now: float, out: list[Item]) -> None:
        """``_pieces`` for fixed unpaced pieces, without a Python step per cut: at 64 bytes a
        piece, the loop cost as much as the write (the pieces and records are the same)."""
        size = self.fault.size_bytes
        assert size is not None
        data, base = chunk.data, chunk.offset
        end = base + len(data)
        inner = range(self._cut, end, size)  # cuts with bytes after them, in this chunk
        edges = [base, *inner, end]
        out.extend([Chunk(data[a - base : b - base], a) for a, b in itertools.pairwise(edges)])
        after = inner[-1] + size if inner else self._cut
        if after == end:  # a cut at the very end stays armed, as in ``_pieces``
            self._armed, after = end, end + size
        self._cut, self._cuts = after, itertools.count(after + size, size)
        if inner:
            detail = f"{len(inner)} write boundaries" if len(inner) > 1 else "write boundary"
            self.ctx.recorder.fault(Slice.kind, inner[0], detail, now)

    def _pieces(self, chunk: Chunk, now: float, out: list[Item]) -> Chunk | None:
        """Hand ``chunk`` on in pieces up to its cuts, in one pass (re-cutting the rest of a
        big read at every 64-byte cut copied it each time: quadratic). Returns the rest when a
        ``delay_ms`` pause comes first; a cut at the chunk's very end stays armed."""
        data, base, pos = chunk.data, chunk.offset, 0
        cuts: list[int] = []
        while True:
            end = min(max(self._cut - base, pos), len(data))
            if end > pos:
                out.append(Chunk(data[pos:end], base + pos))
                pos = end
            if base + pos >= self._cut:
                self._armed, self._cut = self._cut, next(self._cuts)
            if pos == len(data):
                break
            cut, self._armed = self._armed, None  # a cut with bytes after it, in this chunk
            assert cut is not None
            if self.fault.paced:
                self._cut_at(cut, now, out)
            else:
                cuts.append(cut)
            if self.fault.delay_ms:
                self._resume_at = now + self.fault.delay_ms / 1000
                break
        if cuts:  # unpaced: one record per read, not per cut (a record costs a piece's write)
            detail = f"{len(cuts)} write boundaries" if len(cuts) > 1 else "write boundary"
            self.ctx.recorder.fault(Slice.kind, cuts[0], detail, now)
        return None if pos == len(data) else Chunk(data[pos:], base + pos)

    def _cut_at(self, cut: int, now: float, out: list[Item]) -> None:
        """A cut: a read boundary the consumer will see (paced), or just the next write."""
        if self.fault.paced:
            self.ctx.recorder.fault(Slice.kind, cut, "read boundary", now)
            out.append(Boundary(f"slice at {cut}"))
        else:
            self.ctx.recorder.fault(Slice.kind, cut, "write boundary", now)
