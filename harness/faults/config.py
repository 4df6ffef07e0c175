"""What every fault config shares: ``direction``, ``connection``, validation, ``stage``, and
what the rest of the house asks of a fault kind.

A fault is a frozen dataclass with units in its field names (``delay_ms``) and the bounds of its
values on their types (``Annotated[float, Ge(0)]``); rules between fields live in
``_validate``. ``stage(ctx)`` makes the sans-IO stage that carries the fault out on one
connection (``stage.py``). All of it is pure: the proxy, the only part that touches sockets,
drives the stages.

A fault kind owns what anything else needs to know of it, as class attributes and methods
with defaults: its ``effects`` on a stream's content (``effects.py``), whether it takes
wall-clock time (``timed``, ``waits``), whether it ends its connection (``ends_connection``)
or has the consumer reconnect (``reconnects``), the bytes it rewrites on a known stream
(``byte_changes``), what its placement needs beyond its positions (``check_placement``), and
how ``tearline hunt`` draws it (``hunt``, ``hunted``). A new fault is its module and one
registration (``registry.py``): the runner, the judge, the live streams and hunt ask these,
never the kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Protocol, Self

from harness.config.checks import check_fields
from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_RECONNECTS
from harness.errors import FieldError
from harness.faults.effects import Effect
from harness.faults.exchange import ExchangeSelector
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import DIRECTIONS, Direction
from harness.faults.position import Position
from harness.faults.stage import Locator, Stage, StageContext


class Fault(Protocol):
    """One fault: frozen config and the stage that applies it. The members are read-only
    properties so that frozen dataclasses with a ``ClassVar`` kind satisfy the protocol."""

    @property
    def kind(self) -> str: ...

    @property
    def direction(self) -> Direction: ...

    @property
    def connection(self) -> int: ...

    @property
    def request(self) -> ExchangeSelector | None: ...

    @property
    def effects(self) -> frozenset[Effect]: ...

    @property
    def timed(self) -> bool: ...

    @property
    def reconnects(self) -> bool: ...

    @property
    def transparent(self) -> bool: ...

    def silence(self) -> tuple[float, float] | None: ...

    def stage(self, ctx: StageContext) -> Stage: ...

    def waits(self) -> bool: ...

    def silences(self) -> bool: ...

    def ends_connection(self) -> bool: ...

    def byte_changes(self, locator: Locator, wire: bytes) -> dict[int, int]: ...

    def check_placement(self, locator: Locator) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseFault:
    """Fields every fault has.

    - ``direction``: which byte stream the fault acts on: ``downstream`` (producer to consumer,
      the default) or ``upstream`` (consumer to producer).
    - ``connection``: which connection of the case the fault applies to, counted from 1 in the
      order the consumer opened them; 0 applies it to every connection.
    - ``request``: (an MCP session) the exchange the fault applies to, by what its request
      carries, resolved as the session runs (``exchange.py``); instead of ``connection``.
    """

    kind: ClassVar[str]
    #: what it does to a stream's content, as a consumer could tell
    effects: ClassVar[frozenset[Effect]] = frozenset()
    #: its effect is a span of wall-clock time (a wait, a pause, a delay, a rate)
    timed: ClassVar[bool] = False
    #: the consumer is to reconnect after it: the case has one connection more (a toxic
    #: cannot ask that of a client)
    reconnects: ClassVar[bool] = False
    #: it never changes what a consumer receives, only when and in what reads
    transparent: ClassVar[bool] = False
    #: how ``tearline hunt`` draws it (None: hunt never does)
    hunt: ClassVar[Hunt | None] = None
    direction: Direction = "downstream"
    connection: Annotated[int, Ge(0), Le(MAX_RECONNECTS + 1)] = 1
    request: ExchangeSelector | None = None

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise FieldError(
                f"must be 'downstream' or 'upstream' (got {self.direction!r})",
                path=("direction",),
            )
        if self.request is not None and self.connection != 1:
            raise FieldError("give either connection or request, not both", path=("request",))
        check_fields(self)
        self._validate()

    def _validate(self) -> None:
        """Check the rules between the fault's own fields; raise ``FieldError`` naming the
        field. Override this (a slots dataclass cannot call ``super().__post_init__()``)."""

    def stage(self, ctx: StageContext) -> Stage:
        """The stage that applies this fault on one connection."""
        raise NotImplementedError

    def waits(self) -> bool:
        """Does a verdict with this fault depend on wall-clock time: a timed kind, or a
        position in time (a case with one is run where no other case takes its CPU)."""
        at = getattr(self, "at", None)
        return self.timed or (isinstance(at, Position) and at.is_time)

    def silences(self) -> bool:
        """Does it hold its connection open and silent for good (only the consumer's idle
        timeout ends it)?"""
        return False

    def silence(self) -> tuple[float, float] | None:
        """How long the stream falls silent where it acts: (milliseconds without any byte,
        milliseconds without a byte that advances a message; ``math.inf``: for good), or None
        when it never does. Heartbeats are bytes, not progress."""
        return None

    def ends_connection(self) -> bool:
        """Does it end the connection it acts on, for every later fault (a cut, or silence
        for good): a fault placed after it there never happens."""
        return Effect.TRUNCATION in self.effects or self.silences()

    def byte_changes(self, locator: Locator, wire: bytes) -> dict[int, int]:
        """``offset -> new byte`` of what it rewrites in ``wire``, the clean stream that
        ``locator`` places positions on; {} for a fault that rewrites nothing, or where it
        cannot be known before the stream runs (a position in time). ``PositionError`` when
        it cannot be placed."""
        return {}

    def check_placement(self, locator: Locator) -> None:
        """Raise ``FieldError`` or ``PositionError`` for what its placement needs beyond its
        positions and frames (which every fault's are checked for): nothing, by default."""

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        """One fault of this kind on ``connection``, from the search's choices (only for a
        kind with ``hunt``)."""
        raise NotImplementedError(f"tearline hunt does not draw {cls.kind}")
