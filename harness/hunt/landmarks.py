"""Where consumers break in one prepared stream: frame boundaries, the framing bytes around a
message (its prefix, its terminator), the last byte of a frame, multi-byte characters, the bytes
outside every frame, texts worth a ``match``, and the values a consumer must check (ids, the
checksum, sequence numbers, counts). Pure: read off the prepared link.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.link.prepared import PreparedLink

#: texts a ``match`` position may aim at, simplest first (only those in the stream are used)
KEYWORDS = (
    '"checksum"',
    '"sequence"',
    '"total_records"',
    "EOS_FINALIZED",
    '"frame_type":"trailer"',
    '"records"',
    "[DONE]",
    "finish_reason",
    "message_stop",
    '"done"',
    '"content"',
    '"text"',
    "data:",
)


#: JSON keys whose values carry what a consumer must check or hand on exactly (ids and the
#: checksum over them, sequence numbers, counts, the end token, token text)
VALUE_KEYS = (
    "checksum",
    "id",
    "sequence",
    "total_records",
    "end_token",
    "content",
    "text",
    "token",
    "tokens",
)
#: occurrences of each key's value kept (the ids of a long envelope are many)
VALUES_PER_KEY = 4


@dataclass(frozen=True, slots=True)
class Frame:
    """Message ``index`` (1-based) on the clean wire: bytes ``[start, end)``, of which the
    first ``head`` and the last ``tail`` are the framing's (a length prefix, an SSE ``data:``
    line's start, a WebSocket header; a line's LF, an event's blank line)."""

    index: int
    start: int
    end: int
    head: int
    tail: int
    #: bytes of the message itself
    size: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Landmarks:
    stream_length: int
    frames: tuple[Frame, ...]
    #: ``(offset, width)`` of each multi-byte UTF-8 character of the stream, in order, as
    #: ``utf8_char`` positions count them (the first is ``utf8_char: 1``)
    chars: tuple[tuple[int, int], ...]
    #: ``[start, end]`` ranges of offsets outside every frame (handshake, headers, the stream's
    #: end marker); the stream's very end is one
    gaps: tuple[tuple[int, int], ...]
    #: ``(text, offset of its first occurrence)`` of each of ``KEYWORDS`` in the stream
    matches: tuple[tuple[str, int], ...]
    #: offsets of the first byte of the values of ``VALUE_KEYS`` (after the opening quote of a
    #: string), in stream order
    values: tuple[int, ...]
    #: bytes the reference consumer sends upstream on a clean connection
    request_length: int
    #: the largest frame on the wire
    largest_frame: int


def multibyte_chars(wire: bytes) -> list[tuple[int, int]]:
    """``(offset, width)`` of each multi-byte UTF-8 character, counted as
    ``harness.link.locator.utf8_char_offset`` counts them (a lead byte with all its
    continuation bytes)."""
    found = []
    for offset, byte in enumerate(wire):
        if not 0xC2 <= byte <= 0xF4:
            continue
        width = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
        tail = wire[offset + 1 : offset + width]
        if len(tail) == width - 1 and all(0x80 <= b <= 0xBF for b in tail):
            found.append((offset, width))
    return found


def _frame(link: PreparedLink, index: int) -> Frame:
    start, end = link.spans[index - 1]
    data = link.messages[index - 1]
    found = link.wire.find(data, start, end) if data else -1
    if found < 0:  # the message is not on the wire as it is (escaped, fragmented): no head/tail
        return Frame(index, start, end, 0, 0, len(data))
    return Frame(index, start, end, found - start, end - found - len(data), len(data))


def _gaps(length: int, spans: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    gaps, at = [], 0
    for start, end in spans:
        if start > at:
            gaps.append((at, start - 1))
        at = max(at, end)
    gaps.append((at, length))
    return tuple(gaps)


def value_offsets(wire: bytes) -> tuple[int, ...]:
    """Where the values of ``VALUE_KEYS`` start, at most ``VALUES_PER_KEY`` of each."""
    found: set[int] = set()
    for key in VALUE_KEYS:
        head, start, seen = f'"{key}":'.encode(), 0, 0
        while seen < VALUES_PER_KEY and (at := wire.find(head, start)) >= 0:
            value = at + len(head)
            value += 1 if wire[value : value + 1] == b'"' else 0
            if value < len(wire):
                found.add(value)
            start, seen = at + 1, seen + 1
    return tuple(sorted(found))


def landmarks(link: PreparedLink) -> Landmarks:
    frames = tuple(_frame(link, i) for i in range(1, len(link.spans) + 1))
    return Landmarks(
        stream_length=link.stream_length,
        frames=frames,
        chars=tuple(multibyte_chars(link.wire)),
        gaps=_gaps(link.stream_length, link.spans),
        matches=tuple((k, link.wire.find(k.encode())) for k in KEYWORDS if k.encode() in link.wire),
        values=value_offsets(link.wire),
        request_length=len(link.request),
        largest_frame=max((f.length for f in frames), default=0),
    )
