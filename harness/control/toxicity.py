"""Toxicity: a toxic applies to a share of the connections, drawn from the proxy's seed. Pure.

Toxiproxy draws ``rand.Float32() < toxicity`` once per connection and direction, from Go's
global generator, and draws again whenever the toxic is updated or its neighbour in the chain
changes. ``Sometimes`` draws once, from the stage's own generator (seeded by the proxy's seed,
the connection's number, the direction and the toxic's name: ``harness/proxy/server.py``), and
keeps the draw for the connection's life: a connection hit at toxicity 0.3 is still hit at 0.6,
and an update that leaves the toxicity alone changes nobody's luck. ``--seed`` replays it.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.faults.config import Fault
from harness.faults.effects import Effect
from harness.faults.items import Direction, Item
from harness.faults.stage import BaseStage, Locator, Stage, StageContext


@dataclass(frozen=True, slots=True)
class Sometimes:
    """``fault`` on the connections whose draw falls below ``toxicity`` (1: all, 0: none)."""

    fault: Fault
    toxicity: float = 1.0

    @property
    def kind(self) -> str:
        return self.fault.kind

    @property
    def direction(self) -> Direction:
        return self.fault.direction

    @property
    def connection(self) -> int:
        return self.fault.connection

    # What the fault's kind owns, asked of the fault it wraps.
    @property
    def effects(self) -> frozenset[Effect]:
        return self.fault.effects

    @property
    def timed(self) -> bool:
        return self.fault.timed

    @property
    def reconnects(self) -> bool:
        return self.fault.reconnects

    def waits(self) -> bool:
        return self.fault.waits()

    def silences(self) -> bool:
        return self.fault.silences()

    def ends_connection(self) -> bool:
        return self.fault.ends_connection()

    def byte_changes(self, locator: Locator, wire: bytes) -> dict[int, int]:
        return self.fault.byte_changes(locator, wire)

    def check_placement(self, locator: Locator) -> None:
        self.fault.check_placement(locator)

    def stage(self, ctx: StageContext) -> Stage:
        draw = ctx.rng.random()  # first, so the fault's own draws follow the same sequence
        return SometimesStage(self, ctx, draw)


class SometimesStage(BaseStage):
    """The fault's stage, or a pass-through when the draw missed."""

    def __init__(self, fault: Sometimes, ctx: StageContext, draw: float) -> None:
        self.draw = draw
        self.inner: Stage | None = fault.fault.stage(ctx) if draw < fault.toxicity else None

    def pipe(self, item: Item, now: float) -> list[Item]:
        return [item] if self.inner is None else self.inner.pipe(item, now)

    def poll(self, now: float) -> list[Item]:
        return [] if self.inner is None else self.inner.poll(now)

    @property
    def wake_at(self) -> float | None:
        return None if self.inner is None else self.inner.wake_at

    @property
    def accepting(self) -> bool:
        return True if self.inner is None else self.inner.accepting

    def release(self, now: float) -> list[Item]:
        return [] if self.inner is None else self.inner.release(now)

    def retune(self, fault: object) -> bool:
        """Keep the draw: only a toxicity that moves across it changes this connection (then
        the stage is rebuilt, and its generator, seeded the same, draws the same value)."""
        if not isinstance(fault, Sometimes) or (self.draw < fault.toxicity) != (
            self.inner is not None
        ):
            return False
        if self.inner is None:
            return True
        return isinstance(self.inner, BaseStage) and self.inner.retune(fault.fault)
