"""Resolve fault positions against a link's expected wire (``reference_impl.link.expected_wire``).

The reference producer is deterministic, so the bytes it will write on a clean connection are
known before the case runs; frame, UTF-8 character and content positions become byte offsets by
looking at those bytes. The proxy's timeline later proves the fault landed where declared (I5).
Without an expected wire (``OffsetsLocator``) only byte offsets exist. ``check_positions`` says
before anything runs whether every fault of a list can be placed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from harness.faults.base import Fault, Locator, Position, PositionError
from harness.faults.bogus_length import BogusLength, encode_length
from reference_impl.link import ExpectedWire

#: the bytes before a message's payload that carry its length, per framing
_PREFIXES = {
    "length-prefixed": lambda data: struct.pack(">I", len(data)),
    "grpc": lambda data: b"\x00" + struct.pack(">I", len(data)),
}
_LENGTH_WIDTH = 4


def utf8_char_offset(wire: bytes, k: int, char_byte: int) -> int:
    """Offset inside the k-th (1-based) multi-byte UTF-8 character: ``char_byte`` bytes after
    its lead byte (1 = between its first and second byte)."""
    seen = 0
    for offset, byte in enumerate(wire):
        if not 0xC2 <= byte <= 0xF4:
            continue
        width = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
        # A lead byte counts only with all its continuation bytes: framing bytes (a length
        # prefix of 0xC5, a WebSocket or HTTP/2 header) are not characters.
        tail = wire[offset + 1 : offset + width]
        if len(tail) < width - 1 or not all(0x80 <= b <= 0xBF for b in tail):
            continue
        seen += 1
        if seen == k:
            if not 1 <= char_byte < width:
                raise PositionError(f"char_byte: character {k} has {width} bytes")
            return offset + char_byte
    raise PositionError(f"utf8_char: the stream has {seen} multi-byte characters, not {k}")


@dataclass(frozen=True, slots=True)
class WireLocator:
    framing: str
    expected: ExpectedWire
    messages: Sequence[bytes]

    def offset(self, position: Position) -> int:
        if position.offset is not None:
            # At the very end is a place (a kill there replaces the producer's own end).
            if position.offset > len(self.expected.wire):
                raise PositionError(
                    f"offset: the stream has {len(self.expected.wire)} bytes, not {position.offset}"
                )
            return position.offset
        if position.frame is not None:
            start, end = self.frame_span(position.frame)
            if position.frame_offset is not None:
                if position.frame_offset >= end - start:
                    raise PositionError(
                        f"frame_offset: frame {position.frame} has {end - start} bytes on the wire"
                    )
                return start + position.frame_offset
            if position.fraction is not None:
                return start + int(position.fraction * (end - start))
            return start
        if position.utf8_char is not None:
            return utf8_char_offset(self.expected.wire, position.utf8_char, position.char_byte)
        if position.match is not None:
            found = self.expected.wire.find(position.match.encode())
            if found < 0:
                raise PositionError(f"match: {position.match!r} does not occur in the stream")
            return found
        raise PositionError("a time position (after_ms) has no byte offset")

    def frame_span(self, index: int) -> tuple[int, int]:
        spans = self.expected.spans
        if not 1 <= index <= len(spans):
            raise PositionError(f"frame: the stream has {len(spans)} frames, not {index}")
        return spans[index - 1]

    def length_field(self, index: int) -> tuple[int, int]:
        prefix = _PREFIXES.get(self.framing)
        if prefix is None:
            raise PositionError(f"frame {index}: framing {self.framing} has no length prefix")
        start, end = self.frame_span(index)
        data = self.messages[index - 1]
        head = prefix(data)
        found = self.expected.wire.find(head + data[:16], start, end)
        if found < 0:
            raise PositionError(f"frame {index}: length prefix not found on the wire")
        return found + len(head) - _LENGTH_WIDTH, _LENGTH_WIDTH

    @property
    def stream_length(self) -> int:
        return len(self.expected.wire)


class OffsetsLocator:
    """Locator for a direction without an expected wire (upstream, your own producer,
    ``tearline proxy``): byte offsets only."""

    def offset(self, position: Position) -> int:
        if position.offset is None:
            raise PositionError(
                "without the link's expected wire (upstream, or your own producer) only "
                "offset and after_ms positions can be placed"
            )
        return position.offset

    def frame_span(self, index: int) -> tuple[int, int]:
        raise PositionError("frame positions need the link's expected wire")

    def length_field(self, index: int) -> tuple[int, int]:
        raise PositionError("frame positions need the link's expected wire")


def placement_problem(fault: Fault, locator: Locator) -> str:
    """'' or ``key: why`` for the first position, frame or length of ``fault`` that cannot be
    placed with ``locator`` (``at``, ``frame``, ``with_frame``, ``length``)."""
    at = getattr(fault, "at", None)
    key = "at"
    try:
        if isinstance(at, Position) and at.after_ms is None:
            locator.offset(at)
        for key in ("frame", "with_frame"):
            frame = getattr(fault, key, None)
            if isinstance(frame, int):
                locator.frame_span(frame)
        if isinstance(fault, BogusLength):
            key = "frame"
            _, width = locator.length_field(fault.frame)
            key = "length"
            encode_length(fault.length, width)
    except PositionError as err:
        why = str(err) if key == "at" else str(err).removeprefix("frame: ")  # not frame: frame:
        return f"{key}: {why}"
    except ValueError as err:  # encode_length's message already starts with "length: "
        return str(err)
    return ""


def check_positions(faults: Sequence[Fault], downstream: Locator) -> str:
    """'' if every fault can be placed, else the first problem (``faults[i].key: why``).

    Downstream faults are placed with ``downstream`` (the expected wire, or offsets only),
    upstream ones by byte offset only. Checked before a case runs, so a mistake is reported
    as such instead of surfacing inside the proxy in the middle of the case.
    """
    for index, fault in enumerate(faults):
        locator = downstream if fault.direction == "downstream" else OffsetsLocator()
        problem = placement_problem(fault, locator)
        if problem:
            return f"faults[{index}].{problem}"
    return ""
