"""How ``tearline hunt`` draws a fault (pure): the fault class says how often it is drawn and,
given a ``Draw``, makes one instance of itself.

A ``Draw`` is the search's choices for one fault, aimed at the places consumers break (the
landmarks of the stream being hunted: frame boundaries, a length prefix, a multi-byte
character, the stream's end marker) and kept inside the window the faults drawn before it
leave. The search (``harness.search.strategies``) makes it from Hypothesis's draws; nothing
here knows Hypothesis. Every option list a fault passes starts with its simplest (or its
default), because Hypothesis shrinks every choice toward the first option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from harness.faults.heartbeat import HeartbeatKind
from harness.faults.items import Direction
from harness.faults.position import Position

T = TypeVar("T")

#: multiples of the consumer's incomplete-message timeout T a stall or a pause lasts: well
#: above or well below it (never within half of it: a loaded machine cannot change a verdict)
WAIT_FACTORS = (2.5, 0.5, 1.5, 0.2)


@dataclass(frozen=True, slots=True)
class Hunt:
    """A fault kind's place in a hunt."""

    #: where it comes among the kinds, simplest first (a shrunk plan prefers the first)
    rank: int
    #: how often it is drawn, against the other kinds' weights
    weight: int
    #: it may act on the consumer's bytes too (at a byte offset or a time)
    upstream: bool = False
    #: it rewrites a length field: drawn only on framings that put one before each message
    needs_length_field: bool = False


class FrameMark(Protocol):
    """A frame of the stream being hunted."""

    @property
    def index(self) -> int:
        """1-based, as scenarios count frames."""
        ...

    @property
    def size(self) -> int:
        """The message's bytes."""
        ...


class Draw(Protocol):
    """The search's choices for one fault of one connection."""

    @property
    def timeout_ms(self) -> float:
        """The consumer's incomplete-message timeout T in plans with waits."""
        ...

    @property
    def largest_frame(self) -> int:
        """The largest frame's bytes on the wire."""
        ...

    @property
    def heartbeat(self) -> HeartbeatKind | None:
        """The heartbeat the link's framing has (None: it has none)."""
        ...

    def pick(self, options: Sequence[T]) -> T:
        """One of ``options`` (shrinks to the first)."""
        ...

    def between(self, low: int, high: int) -> int:
        """An integer in ``[low, high]`` (shrinks to ``low``)."""
        ...

    def boolean(self) -> bool: ...

    def place(self, *, byte_only: bool) -> tuple[Position, Direction]:
        """Where the fault acts and on which stream: mostly a byte position of the producer's
        stream at a landmark; with ``byte_only`` False sometimes a time; for a kind that may
        act upstream, sometimes a place in the consumer's bytes."""
        ...

    def byte_position(self) -> Position:
        """A byte position of the producer's stream at a landmark."""
        ...

    def frame(self) -> FrameMark:
        """A frame of the producer's stream."""
        ...

    def other_frame(self, than: FrameMark) -> int:
        """The index of a frame other than ``than``."""
        ...

    def wait_ms(self) -> float:
        """How long a wait lasts: a multiple of T from ``WAIT_FACTORS``."""
        ...
