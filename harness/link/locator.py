"""Fault positions on a prepared link: the previews of ``tearline validate``, ``list`` and
``hunt``'s plans, never where a case's faults are placed.

The reference producer is deterministic, so the bytes it writes on a clean connection for the
reference consumer are known before anything runs (``prepared.py``): frame, UTF-8 character
and content positions become byte offsets by looking at those bytes. That is a prediction: a
case places its faults on the live stream (``live.py``), where a consumer with another
request, or another producer, puts the bytes elsewhere.

``placement_problem`` and ``check_positions`` say before anything runs whether a fault (a list
of faults) can be placed; their errors carry the key path of what cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import FieldError, HarnessError, PositionError
from harness.faults.config import Fault
from harness.faults.position import Position
from harness.faults.stage import Locator
from harness.link.live import LinkTraits, LiveStream
from harness.link.prepared import PreparedLink


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
                raise PositionError(f"character {k} has {width} bytes", path=("char_byte",))
            return offset + char_byte
    raise PositionError(
        f"the stream has {seen} multi-byte characters, not {k}", path=("utf8_char",)
    )


@dataclass(frozen=True, slots=True)
class PreparedLocator:
    """Positions on the prepared link's clean wire: everything is known before the case."""

    link: PreparedLink

    def offset(self, position: Position) -> int:
        wire = self.link.wire
        if position.offset is not None:
            # At the very end is a place (a kill there replaces the producer's own end).
            if position.offset > len(wire):
                message = f"the stream has {len(wire)} bytes, not {position.offset}"
                raise PositionError(message, path=("offset",))
            return position.offset
        if position.frame is not None:
            return self._in_frame(position, position.frame)
        if position.utf8_char is not None:
            return utf8_char_offset(wire, position.utf8_char, position.char_byte)
        if position.match is not None:
            found = wire.find(position.match.encode())
            if found < 0:
                message = f"{position.match!r} does not occur in the stream"
                raise PositionError(message, path=("match",))
            return found
        raise PositionError("a time position (after_ms) has no byte offset", path=("after_ms",))

    def not_before(self, position: Position) -> int:
        return self.offset(position)

    def frame_span(self, index: int) -> tuple[int, int]:
        spans = self.link.spans
        if not 1 <= index <= len(spans):
            raise PositionError(f"the stream has {len(spans)} frames, not {index}", path=("frame",))
        return spans[index - 1]

    def length_field(self, index: int) -> tuple[int, int]:
        self.frame_span(index)
        found = self.link.length_field(index)
        if found is None:
            framing = self.link.spec.framing
            message = f"framing {framing} has no length prefix in frame {index}"
            raise PositionError(message, path=("frame",))
        return found

    def _in_frame(self, position: Position, frame: int) -> int:
        start, end = self.frame_span(frame)
        if position.frame_offset is not None:
            if position.frame_offset >= end - start:
                message = f"frame {frame} has {end - start} bytes on the wire"
                raise PositionError(message, path=("frame_offset",))
            return start + position.frame_offset
        if position.fraction is not None:
            return start + int(position.fraction * (end - start))
        return start


def placement_problem(fault: Fault, locator: Locator) -> HarnessError | None:
    """The first position, frame or length of ``fault`` that cannot be placed with
    ``locator``, as an error whose path starts at the fault's key (``at``, ``frame``,
    ``with_frame``, ``length``); None if all can."""
    at = getattr(fault, "at", None)
    try:
        if isinstance(at, Position) and at.after_ms is None:
            try:
                locator.offset(at)
            except PositionError as err:
                raise err.within("at") from None
        for key in ("frame", "with_frame"):
            frame = getattr(fault, key, None)
            if isinstance(frame, int):
                try:
                    locator.frame_span(frame)
                except PositionError as err:
                    raise PositionError(err.message, path=(key,)) from None
        fault.check_placement(locator)
    except (PositionError, FieldError) as err:
        return err
    return None


def check_positions(faults: Sequence[Fault], downstream: Locator) -> HarnessError | None:
    """None if every fault can be placed, else the first problem (path ``faults[i]...``).

    Downstream faults are placed with ``downstream`` (the prepared link), upstream ones on a
    raw stream (offsets, matches, characters and times).
    """
    for index, fault in enumerate(faults):
        locator = downstream if fault.direction == "downstream" else LiveStream(LinkTraits())
        problem = placement_problem(fault, locator)
        if problem is not None:
            return problem.within("faults", index)
    return None
