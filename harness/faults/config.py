"""What every fault config shares: ``direction``, ``connection``, validation, and ``stage``.

A fault is a frozen dataclass with units in its field names (``delay_ms``) and the bounds of its
values on their types (``Annotated[float, Ge(0)]``); rules between fields live in
``_validate``. ``stage(ctx)`` makes the sans-IO stage that carries the fault out on one
connection (``stage.py``). All of it is pure: the proxy, the only part that touches sockets,
drives the stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Protocol

from harness.config.checks import check_fields
from harness.config.constraints import Ge, Le
from harness.config.limits import MAX_RECONNECTS
from harness.errors import FieldError
from harness.faults.items import DIRECTIONS, Direction
from harness.faults.stage import Stage, StageContext


class Fault(Protocol):
    """One fault: frozen config and the stage that applies it. The members are read-only
    properties so that frozen dataclasses with a ``ClassVar`` kind satisfy the protocol."""

    @property
    def kind(self) -> str: ...

    @property
    def direction(self) -> Direction: ...

    @property
    def connection(self) -> int: ...

    def stage(self, ctx: StageContext) -> Stage: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseFault:
    """Fields every fault has.

    - ``direction``: which byte stream the fault acts on: ``downstream`` (producer to consumer,
      the default) or ``upstream`` (consumer to producer).
    - ``connection``: which connection of the case the fault applies to, counted from 1 in the
      order the consumer opened them; 0 applies it to every connection.
    """

    kind: ClassVar[str]
    direction: Direction = "downstream"
    connection: Annotated[int, Ge(0), Le(MAX_RECONNECTS + 1)] = 1

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise FieldError(
                f"must be 'downstream' or 'upstream' (got {self.direction!r})",
                path=("direction",),
            )
        check_fields(self)
        self._validate()

    def _validate(self) -> None:
        """Check the rules between the fault's own fields; raise ``FieldError`` naming the
        field. Override this (a slots dataclass cannot call ``super().__post_init__()``)."""

    def stage(self, ctx: StageContext) -> Stage:
        """The stage that applies this fault on one connection."""
        raise NotImplementedError
