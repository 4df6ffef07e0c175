"""Fault stages: the sans-IO half of every fault, and the chain one direction runs them in.

A fault config (a frozen dataclass) makes a ``Stage`` for each connection it applies to. A stage
is a small state machine with no I/O and no clock of its own, like an h11 connection: the proxy
(``harness/proxy/direction.py``) reads the source socket, feeds what it read and the time, and
writes what comes out. Tests drive the same stages on a virtual clock
(``tests/faults/conftest.py``).

- ``pipe(item, now)``: take one item from the stage before; return the items to hand on now.
- ``poll(now)``: the clock moved; return what is due by ``now`` (a delayed chunk, a heartbeat,
  the rest of a stall).
- ``wake_at``: when ``poll`` next has something to do (None: only new items matter).
- ``accepting``: False holds the source: the proxy reads nothing more until it is True again,
  so the producer feels the fault as backpressure (a stall, a slow consumer, a throttle).
- ``release(now)``: the stage is taken off a running connection (the control API): hand on
  everything it holds, in order, so that no byte is lost that the fault does not drop.
- ``retune(fault)`` (``BaseStage``): the fault under the same name changed on a running
  connection; a stage that can take the new settings and keep its state (the bytes a
  ``limit_data`` already let through) does so and returns True, else it is replaced.

``Chain`` runs stages in order, each one's output becoming the next one's input; the proxy may
change its stages between steps (``harness/proxy/plans.py``).
``PositionedStage`` is the shape most faults share: pass the stream through until it reaches
the fault's position (cutting the chunk that straddles it), fire there once, then treat what
follows. Positions are resolved by the direction's ``Locator``: the prepared link of a case, or
a live decoder of the stream (then a position may become known only as its bytes arrive).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.errors import HarnessError, PositionError
from harness.faults.items import Chunk, Close, Direction, End, Item, split_chunk
from harness.faults.position import Position


class Locator(Protocol):
    """Where positions, frames and length fields are in one direction's source stream."""

    def offset(self, position: Position) -> int | None:
        """The stream offset of ``position``; None while the stream has not shown it yet.
        Raises ``PositionError`` when the stream can never have it (frame 9 of 5)."""
        ...

    def not_before(self, position: Position) -> int:
        """While ``offset`` is None: the first offset the position could still be at (the
        bytes before it can be handed on)."""
        ...

    def frame_span(self, index: int) -> tuple[int, int] | None:
        """``[start, end)`` of the bytes of message ``index`` (1-based); None while unknown;
        ``PositionError`` if there is no such message."""
        ...

    def length_field(self, index: int) -> tuple[int, int] | None:
        """``(offset, width)`` of message ``index``'s length prefix; None while unknown;
        ``PositionError`` if the framing has none."""
        ...


class Recorder(Protocol):
    """Where stages say what they did, for the wire timeline (fidelity, I5)."""

    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None: ...


@dataclass(frozen=True, slots=True)
class LinkShape:
    """What a stage may need to know of the link's framing and payload (a heartbeat's bytes,
    an injected event's)."""

    framing: str | None = None
    sse_chunked: bool = True
    #: the token profile, when the payload is tokens (an injected event's API)
    profile: str | None = None
    #: WebSocket messages as text frames (else binary)
    ws_text: bool = True


@dataclass(slots=True)
class StageContext:
    """What a stage may use besides its items."""

    direction: Direction
    locator: Locator
    recorder: Recorder
    #: this stage's own generator, derived from the case seed (the same stage of the same case
    #: draws the same values on every run)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    #: when the connection's first byte arrived (``after_ms`` counts from here)
    started_at: float = 0.0
    shape: LinkShape = field(default_factory=LinkShape)


class Stage(Protocol):
    def pipe(self, item: Item, now: float) -> list[Item]: ...

    def poll(self, now: float) -> list[Item]: ...

    @property
    def wake_at(self) -> float | None: ...

    @property
    def accepting(self) -> bool: ...

    def release(self, now: float) -> list[Item]: ...


class BaseStage:
    """A stage that passes everything through; faults override what they change."""

    def pipe(self, item: Item, now: float) -> list[Item]:
        return [item]

    def poll(self, now: float) -> list[Item]:
        return []

    @property
    def wake_at(self) -> float | None:
        return None

    @property
    def accepting(self) -> bool:
        return True

    def release(self, now: float) -> list[Item]:
        return []

    def retune(self, fault: object) -> bool:
        """Take ``fault``'s settings and keep this stage's state (True), or say it must be
        replaced (False, the default)."""
        return False


class Chain:
    """Stages in order; what one hands on is the next one's input."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)

    def pipe(self, item: Item, now: float) -> list[Item]:
        stages = self.stages
        if len(stages) == 1:  # the usual chain, on every read: no list to pass along
            return stages[0].pipe(item, now)
        return self._through(0, [item], now)

    def pipe_from(self, index: int, items: list[Item], now: float) -> list[Item]:
        """``items`` through the stages from ``index`` on (what a stage taken off the chain
        held goes on from where that stage was)."""
        return self._through(index, items, now)

    def poll(self, now: float) -> list[Item]:
        """Every stage's due items, each passed through the stages after it. A stage's own
        due items come before what the stages before it hand on at the same instant."""
        carry: list[Item] = []
        for stage in self.stages:
            out = stage.poll(now)
            for item in carry:
                out += stage.pipe(item, now)
            carry = out
        return carry

    # (Both are asked before every read; plain loops cost half of a comprehension's.)
    @property
    def wake_at(self) -> float | None:
        stages = self.stages
        if len(stages) == 1:
            return stages[0].wake_at
        soonest = None
        for stage in stages:
            due = stage.wake_at
            if due is not None and (soonest is None or due < soonest):
                soonest = due
        return soonest

    @property
    def accepting(self) -> bool:
        for stage in self.stages:  # noqa: SIM110 (all() over a generator: twice the cost)
            if not stage.accepting:
                return False
        return True

    def _through(self, start: int, items: list[Item], now: float) -> list[Item]:
        for stage in self.stages[start:]:
            out: list[Item] = []
            for item in items:
                out += stage.pipe(item, now)
            items = out
        return items


def record_unreached(ctx: StageContext, stage: object, err: HarnessError, now: float) -> None:
    """Say in the timeline why a fault never fired (the judge quotes it, I5)."""
    kind = getattr(getattr(stage, "fault", None), "kind", "fault")
    ctx.recorder.fault("unreached", None, f"{kind}: {err.text}", now)


class PositionedStage(BaseStage):
    """A fault that fires once where the stream reaches ``at``; subclasses say what ``fire``
    does there and what happens ``after`` it (default: everything passes).

    Items before the position pass through as they come; the chunk that straddles it is cut
    there. A byte position fires as soon as the stream reaches it, without waiting for the next
    item (a kill at the very end of the stream replaces the producer's own end). A time position
    (``after_ms``) counts from ``started_at`` once the first item arrived, and fires between the
    bytes that came before that time and the rest. A stream that ends first never fires it.
    """

    def __init__(self, at: Position, ctx: StageContext) -> None:
        self.at = at
        self.ctx = ctx
        self.fired = False
        #: the position can never be reached on this stream: everything passes
        self.over = False
        #: the end offset of the last chunk handed on: how far the stream has come
        self.position = 0
        self._held: list[Item] = []  # past what may be handed on while the position is unknown
        self._deadline: float | None = None
        self._started = False
        self._over = False  # a time position whose stream ended first: it never fires

    # -- what subclasses define ------------------------------------------------------------
    def fire(self, offset: int, now: float) -> list[Item]:
        """The fault, where the stream reached ``offset``; returns items to hand on there."""
        raise NotImplementedError

    def after(self, item: Item, now: float) -> list[Item]:
        """An item after the fault fired."""
        return [item]

    # -- the stage -------------------------------------------------------------------------
    def pipe(self, item: Item, now: float) -> list[Item]:
        if self.fired:
            return self.after(item, now)
        if self.over:
            return [item]
        if self.at.after_ms is not None:
            return self._timed(item, now)
        self._held.append(item)
        return self._advance(now)

    def poll(self, now: float) -> list[Item]:
        if self.fired or self.over:
            return []
        if self.at.after_ms is not None:
            if self._deadline is not None and now >= self._deadline:
                return self._fire(self.position, now)
            return []
        self._started = True
        return self._advance(now)

    @property
    def wake_at(self) -> float | None:
        if self.fired or self.over:
            return None
        if self.at.after_ms is not None:
            return self._deadline
        return None if self._started else 0.0  # one poll at the start: a fault at byte 0

    def release(self, now: float) -> list[Item]:
        held, self._held = self._held, []
        return held

    # -- internals -------------------------------------------------------------------------
    def _timed(self, item: Item, now: float) -> list[Item]:
        if self._over:
            return [item]
        if isinstance(item, End | Close):  # the stream ended before the time came
            self._over, self._deadline = True, None
            return [item]
        if self._deadline is None:
            assert self.at.after_ms is not None
            self._deadline = self.ctx.started_at + self.at.after_ms / 1000
        if now >= self._deadline:
            return self._fire(self.position, now) + self.after(item, now)
        self._note(item)
        return [item]

    def _advance(self, now: float) -> list[Item]:
        try:
            offset = self.ctx.locator.offset(self.at)
            limit = self.ctx.locator.not_before(self.at) if offset is None else offset
        except PositionError as err:
            return self._unreached(err, now)
        out = self._take_before(limit)
        if offset is None or not self._reached(offset):
            return out
        rest, self._held = self._held, []
        out += self._fire(offset, now)
        for item in rest:
            out += self.after(item, now)
        return out

    def _take_before(self, limit: int) -> list[Item]:
        """Hand on the held items that lie before stream offset ``limit``, cutting the chunk
        that straddles it; what lies at or past ``limit`` stays held."""
        out: list[Item] = []
        while self._held:
            item = self._held[0]
            if not isinstance(item, Chunk):
                if self.position >= limit or isinstance(item, End):
                    # at the position nothing passes; End passes only once all before it did
                    if isinstance(item, End) and self.position < limit:
                        out.append(self._held.pop(0))
                    break
                out.append(self._held.pop(0))
                continue
            before, after = split_chunk(item, limit)
            if before is None:
                break  # the next bytes start at or past the limit (an earlier drop)
            out.append(before)
            self.position = before.end
            if after is None:
                self._held.pop(0)
            else:
                self._held[0] = after
                break
        return out

    def _reached(self, offset: int) -> bool:
        if self.position >= offset:
            return True
        first = self._held[0] if self._held else None
        return isinstance(first, Chunk) and first.offset >= offset

    def _fire(self, offset: int, now: float) -> list[Item]:
        self.fired = True
        return self.fire(offset, now)

    def _unreached(self, err: PositionError, now: float) -> list[Item]:
        """The live stream shows it will never have the position: the fault never fires, what
        it held passes, and the timeline says why (the case is inconclusive, I5)."""
        self.over = True
        record_unreached(self.ctx, self, err.within("at"), now)
        held, self._held = self._held, []
        return held

    def _note(self, item: Item) -> None:
        if isinstance(item, Chunk):
            self.position = item.end
