"""The items that flow through one direction of the proxy, and pure chunk arithmetic.

A direction is a chain of fault stages (``stage.py``). The proxy reads the source socket and
feeds ``Chunk`` items into the first stage; what the last stage hands on, the proxy writes:

- ``Chunk(data, offset)``: bytes with their offset in this direction's source stream (the
  producer's bytes as read, before any fault changed them; after a fault dropped or inserted
  bytes, later chunks keep their original offsets, so positions always mean what the
  producer sent).
- ``Boundary(note)``: make the consumer see a read boundary here: the proxy waits until the
  consumer has read every byte written so far before it writes the next one (a split).
- ``Close(how)``: end the destination leg now: ``fin`` (graceful close), ``rst`` (SO_LINGER 0,
  then close) or ``half`` (FIN in this direction only; the other direction stays open).
  Nothing after it is written.
- ``Heartbeat(data, kind)``: bytes that are not the producer's (an SSE ``: ping``, a WebSocket
  ping frame; ``kind="inserted"`` for what an ``insert`` fault adds), written as they are;
  they have no offset.
- ``End()``: the source ended (EOF); the proxy forwards it as a half-close.

Rule: no byte is lost unless losing it is the fault; a stage hands on what it holds before it
hands on ``End``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

CloseHow = Literal["fin", "rst", "half"]
Direction = Literal["downstream", "upstream"]
DIRECTIONS: tuple[Direction, ...] = ("downstream", "upstream")
CLOSE_HOWS: tuple[CloseHow, ...] = ("fin", "rst", "half")


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
    #: how the timeline names it: "heartbeat", or "inserted"
    kind: str = "heartbeat"


@dataclass(frozen=True, slots=True)
class End:
    """The source's EOF."""


Item = Chunk | Boundary | Close | Heartbeat | End


def is_final(item: Item) -> bool:
    """Nothing follows this item on the destination leg."""
    return isinstance(item, Close | End)


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


def byte_count(items: list[Item]) -> int:
    """Bytes of the producer's stream among ``items`` (heartbeats are not)."""
    return sum(len(item.data) for item in items if isinstance(item, Chunk))
