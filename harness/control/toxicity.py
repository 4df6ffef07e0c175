"""Toxicity: a toxic applies to a share of the connections, drawn from the proxy's seed. Pure.

Toxiproxy draws ``rand.Float32() < toxicity`` once per connection and direction, from Go's
global generator, and draws again whenever the toxic is updated or its neighbour in the chain
changes. ``Sometimes`` draws once, from the stage's own generator (seeded by the proxy's seed,
the connection's number, the direction and the toxic's name: ``harness/proxy/server.py``), and
keeps the draw for the connection's life: a connection hit at toxicity 0.3 is still hit at 0.6,
and an update that leaves the toxicity alone changes nobody's luck. ``--seed`` replays it.

``Aimed`` is tearline's addition: a toxic on one connection only (the Nth), on one client's
connections only, or from a position of its stream on (the first ``match`` of a text).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.faults.config import Fault
from harness.faults.effects import Effect
from harness.faults.exchange import ExchangeSelector
from harness.faults.items import Direction, Item
from harness.faults.position import Position
from harness.faults.stage import BaseStage, Locator, PositionedStage, Stage, StageContext


class Wrapping:
    """What a toxic's wrapper of a fault (``Sometimes``, ``Aimed``) answers for the fault it
    wraps: what the fault's kind owns (``harness/faults/config.py``) is the wrapped one's."""

    __slots__ = ()
    fault: Fault

    @property
    def kind(self) -> str:
        return self.fault.kind

    @property
    def direction(self) -> Direction:
        return self.fault.direction

    @property
    def request(self) -> ExchangeSelector | None:
        return self.fault.request

    @property
    def effects(self) -> frozenset[Effect]:
        return self.fault.effects

    @property
    def timed(self) -> bool:
        return self.fault.timed

    @property
    def reconnects(self) -> bool:
        return self.fault.reconnects

    @property
    def transparent(self) -> bool:
        return self.fault.transparent

    def silence(self) -> tuple[float, float] | None:
        return self.fault.silence()

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


@dataclass(frozen=True, slots=True)
class Sometimes(Wrapping):
    """``fault`` on the connections whose draw falls below ``toxicity`` (1: all, 0: none)."""

    fault: Fault
    toxicity: float = 1.0

    @property
    def connection(self) -> int:
        return self.fault.connection

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


# -- tearline's aims: one client, the Nth connection, from a position on ----------------------
@dataclass(frozen=True, slots=True)
class ClientTarget:
    """The client a toxic is aimed at: an address, and a port or any port."""

    host: str
    port: int | None = None

    def matches(self, client: tuple[str, int]) -> bool:
        return client[0] == self.host and (self.port is None or client[1] == self.port)

    def shown(self) -> str:
        if self.port is None:
            return self.host
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Aimed(Wrapping):
    """A toxic's fault (its toxicity applied) on fewer connections or from later on:
    ``connection`` N (the Nth connection since the proxy was enabled; 0: every one), a
    ``client`` (the proxy's plan leaves the others out), and ``start``: the toxic does
    nothing on a connection until its stream reaches this position (a ``match``: the first
    occurrence of a text), and acts on everything from there on."""

    fault: Fault
    connection: int = 0
    client: ClientTarget | None = None
    start: Position | None = None

    def stage(self, ctx: StageContext) -> Stage:
        return AimedStage(self, ctx)


def aimed_at(fault: object) -> ClientTarget | None:
    """The client ``fault`` is aimed at, if it is aimed at one."""
    return fault.client if isinstance(fault, Aimed) else None


class AimedStage(PositionedStage):
    """Everything passes until the stream reaches ``start`` (the chunk that straddles it is
    cut there); from there on, the toxic's own stage has the stream. Without a ``start`` the
    toxic's stage has it from the first byte."""

    def __init__(self, aimed: Aimed, ctx: StageContext) -> None:
        super().__init__(aimed.start or _FIRST_BYTE, ctx)
        self.aimed = aimed
        self.inner: Stage | None = None
        if aimed.start is None:
            self.fired = True
            self.inner = aimed.fault.stage(ctx)

    def fire(self, offset: int, now: float) -> list[Item]:
        assert self.aimed.start is not None
        self.ctx.recorder.fault("from", offset, self.aimed.start.describe(), now)
        self.inner = self.aimed.fault.stage(self.ctx)
        return []

    def after(self, item: Item, now: float) -> list[Item]:
        return [item] if self.inner is None else self.inner.pipe(item, now)

    def poll(self, now: float) -> list[Item]:
        if self.inner is not None:
            return self.inner.poll(now)
        return super().poll(now)

    @property
    def wake_at(self) -> float | None:
        if self.inner is not None:
            return self.inner.wake_at
        return super().wake_at

    @property
    def accepting(self) -> bool:
        return True if self.inner is None else self.inner.accepting

    def release(self, now: float) -> list[Item]:
        if self.inner is not None:
            return self.inner.release(now)
        return super().release(now)

    def retune(self, fault: object) -> bool:
        """The same aims with new settings: a toxic not yet reached takes them as they are;
        one that acts already keeps its stage if that stage takes them."""
        if not isinstance(fault, Aimed) or fault.start != self.aimed.start:
            return False
        inner = self.inner
        if inner is not None and not (isinstance(inner, BaseStage) and inner.retune(fault.fault)):
            return False
        self.aimed = fault
        return True


_FIRST_BYTE = Position(offset=0)
