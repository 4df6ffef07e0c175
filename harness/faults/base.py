"""What every fault shares: the items that flow through a pipeline, positions, and the context.

A proxy direction is a chain of faults joined by trio memory channels (toxiproxy's link.go). The
relay reads the source socket and sends ``Chunk`` items into the first fault; the last fault's
output goes to the writer, which owns the destination socket. Each fault's ``pipe`` reads items
from ``rx`` and writes items to ``tx`` until ``rx`` ends, then closes ``tx`` (EOF propagates).

Items:

- ``Chunk(data, offset)``: bytes with their offset in this direction's byte stream (the offset of
  the original stream, before any fault changed it; after a fault dropped or inserted bytes, later
  chunks keep their original offsets, so positions always refer to what the producer sent).
- ``Boundary(note)``: the writer must make the consumer see a read boundary here: it waits until
  the consumer has read every byte written so far before it writes the next chunk (a split).
- ``Close(how)``: end the destination leg now: ``"fin"`` (graceful close), ``"rst"`` (SO_LINGER 0
  then close), ``"half"`` (send_eof, keep the other direction open). Items after it are dropped.
- ``Heartbeat(data)``: bytes that are not part of the producer's stream (an SSE ``: ping``), to
  be written as they are; they have no offset.

Rule: no byte is lost unless losing it is the fault (a ``drop``); a fault forwards what it holds
before it closes ``tx`` at EOF. Cancellation is teardown (the writer is cancelled in the same
scope, so nobody would read a flush): a cancelled fault just stops.

Below the protocol: ``BaseFault`` (the fields every fault has and the validation hook), the
position and value checks faults call from ``__post_init__``, ``field_docs`` (user documentation
of fields, read from docstrings) and pure chunk arithmetic (``split_chunk``, ``split_every``,
``rewrite_chunk``). The async plumbing that moves items lives in ``reader.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol, get_args

import trio

CloseHow = Literal["fin", "rst", "half"]
Direction = Literal["downstream", "upstream"]


@dataclass(frozen=True, slots=True)
class Chunk:
    data: bytes
    offset: int

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True, slots=True)
class Boundary:
    note: str = ""


@dataclass(frozen=True, slots=True)
class Close:
    how: CloseHow


@dataclass(frozen=True, slots=True)
class Heartbeat:
    data: bytes


Item = Chunk | Boundary | Close | Heartbeat
ItemRx = trio.MemoryReceiveChannel[Item]
ItemTx = trio.MemorySendChannel[Item]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a fault applies, in the producer's byte stream of one direction. Exactly one of
    ``offset``, ``frame``, ``utf8_char``, ``match``, ``after_ms`` is set.

    - ``offset``: absolute byte offset (0 = before the first byte).
    - ``frame`` (1-based message index) with ``frame_offset`` (bytes into the bytes that frame
      occupies on the wire) or ``fraction`` (0.0-1.0 of them); default: the frame's first byte.
    - ``utf8_char`` (1-based index of a multi-byte UTF-8 character in the stream) with
      ``char_byte`` (1 = cut after its first byte).
    - ``match``: the first occurrence of this UTF-8 text; the position is its first byte.
    - ``after_ms``: time since the connection's first byte, for time-triggered faults.
    """

    offset: int | None = None
    frame: int | None = None
    frame_offset: int | None = None
    fraction: float | None = None
    utf8_char: int | None = None
    char_byte: int = 1
    match: str | None = None
    after_ms: float | None = None


class PositionError(ValueError):
    """A position that does not exist in the stream (frame 9 of 5, no such match, ...)."""


class Locator(Protocol):
    """Resolves positions against the expected wire of one direction (built by the runner)."""

    def offset(self, position: Position) -> int:
        """The absolute byte offset of ``position``; PositionError if it has none."""
        ...

    def frame_span(self, index: int) -> tuple[int, int]:
        """``[start, end)`` of the bytes emitted for message ``index`` (1-based)."""
        ...

    def length_field(self, index: int) -> tuple[int, int]:
        """``(offset, width)`` of message ``index``'s length prefix; PositionError if none."""
        ...


class Recorder(Protocol):
    """Where faults log what they did, for the wire timeline (fidelity, I5)."""

    def fault(self, name: str, offset: int | None, detail: str) -> None: ...


@dataclass(slots=True)
class LinkContext:
    """What a fault may use besides its channels."""

    direction: Direction
    locator: Locator
    recorder: Recorder
    #: this fault's own generator, derived from the case seed by the runner
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    #: trio.current_time() when the connection's first byte arrived (for ``after_ms``)
    started_at: float = 0.0


class Fault(Protocol):
    """One fault: frozen config (fields with units in their names) and one ``pipe`` method.

    The members are read-only properties so that frozen dataclasses (whose fields are read-only)
    with a ``ClassVar`` kind satisfy the protocol under mypy.
    """

    @property
    def kind(self) -> str: ...

    @property
    def direction(self) -> Direction: ...

    @property
    def connection(self) -> int: ...

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None: ...


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
    connection: int = 1

    def __post_init__(self) -> None:
        if self.direction not in get_args(Direction):
            raise ValueError(
                f"direction: must be 'downstream' or 'upstream' (got {self.direction!r})"
            )
        check_range("connection", self.connection, low=0)
        self._validate()

    def _validate(self) -> None:
        """Check the fault's own fields; raise ValueError naming the field. Override this (a
        slots dataclass cannot call ``super().__post_init__()``)."""

    async def pipe(self, rx: ItemRx, tx: ItemTx, ctx: LinkContext) -> None:
        """Forward items from ``rx`` to ``tx``, applying the fault, until ``rx`` ends; then
        close ``tx``."""
        raise NotImplementedError


# ---- validation helpers (messages read "field: rule (got value)", like the scenario loader's)


def check_range(name: str, value: float, *, low: float, high: float | None = None) -> None:
    """``low <= value <= high`` and finite, else ValueError naming ``name``."""
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be a finite number (got {value!r})")
    if value < low:
        raise ValueError(f"{name}: must be >= {low:g} (got {value!r})")
    if high is not None and value > high:
        raise ValueError(f"{name}: must be <= {high:g} (got {value!r})")


def check_position(at: Position, *, name: str = "at", time_ok: bool) -> None:
    """A position with exactly one placement and sane values; ``after_ms`` only if ``time_ok``."""
    placements = ("offset", "frame", "utf8_char", "match", "after_ms")
    chosen = [p for p in placements if getattr(at, p) is not None]
    if len(chosen) != 1:
        raise ValueError(
            f"{name}: set exactly one of {', '.join(placements)} (got {chosen or 'none'})"
        )
    if at.after_ms is not None and not time_ok:
        raise ValueError(f"{name}.after_ms: this fault needs a byte position, not a time")
    if at.frame is None and (at.frame_offset is not None or at.fraction is not None):
        raise ValueError(f"{name}: frame_offset and fraction need frame")
    if at.frame_offset is not None and at.fraction is not None:
        raise ValueError(f"{name}: set frame_offset or fraction, not both")
    _check_position_values(at, name)


def _check_position_values(at: Position, name: str) -> None:
    lows: dict[str, float] = {"offset": 0, "frame": 1, "frame_offset": 0, "utf8_char": 1}
    lows |= {"char_byte": 1, "after_ms": 0}
    for attr, low in lows.items():
        value = getattr(at, attr)
        if value is not None:
            check_range(f"{name}.{attr}", value, low=low)
    if at.fraction is not None:
        check_range(f"{name}.fraction", at.fraction, low=0.0, high=1.0)
    if at.match == "":
        raise ValueError(f"{name}.match: must not be empty")


# ---- field documentation, for the scenario reference and the JSON Schema

_FIELD_DOC = re.compile(r"^- ``(\w+)``: (.*)$")


def field_docs(cls: type) -> dict[str, str]:
    """``{field: text}`` from the ``- ``name``: text`` lines of the docstrings of ``cls`` and
    its bases (a subclass's text wins; indented lines continue the previous entry), in the
    order of the dataclass's fields."""
    docs: dict[str, str] = {}
    for klass in cls.__mro__:
        last = ""
        for line in inspect.cleandoc(klass.__dict__.get("__doc__") or "").splitlines():
            found = _FIELD_DOC.match(line)
            if found:
                last = found[1] if found[1] not in docs else ""
                if last:
                    docs[last] = found[2]
            elif last and line.startswith("  ") and line.strip():
                docs[last] += " " + line.strip()
            else:
                last = ""
    order = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
    return {name: docs[name] for name in order if name in docs} | docs


# ---- pure chunk arithmetic (offsets are absolute stream offsets)


def split_chunk(chunk: Chunk, offset: int) -> tuple[Chunk | None, Chunk | None]:
    """Cut ``chunk`` at stream ``offset``: ``(before, after)``, None for a side with no bytes."""
    cut = min(max(offset - chunk.offset, 0), len(chunk.data))
    before = Chunk(chunk.data[:cut], chunk.offset) if cut > 0 else None
    after = Chunk(chunk.data[cut:], chunk.offset + cut) if cut < len(chunk.data) else None
    return before, after


def split_every(chunk: Chunk, size: int) -> list[Chunk]:
    """``chunk`` as consecutive pieces of ``size`` bytes (the last may be shorter)."""
    data, start = chunk.data, chunk.offset
    return [Chunk(data[i : i + size], start + i) for i in range(0, len(data), size)]


def rewrite_chunk(
    chunk: Chunk, start: int, end: int, byte_at: Callable[[int, int], int]
) -> tuple[Chunk, int]:
    """Replace each byte at stream offset ``p`` in ``[start, end)`` by ``byte_at(p, old)``.

    Returns the new chunk (same offset and length) and how many of its bytes were in range.
    """
    first, last = max(start, chunk.offset), min(end, chunk.end)
    if first >= last:
        return chunk, 0
    data = bytearray(chunk.data)
    for p in range(first, last):
        data[p - chunk.offset] = byte_at(p, data[p - chunk.offset])
    return Chunk(bytes(data), chunk.offset), last - first
