"""Incremental parser for the WHATWG ``text/event-stream`` format (HTML §9.2.5-9.2.6), on bytes.

Pure and transport-free: ``sse.py`` feeds it the HTTP body that h11 extracts. The rules, with the
failure-catalogue cases (section A) they answer:

- Lines end at CR, LF or CRLF, and nowhere else (cases 3-5). U+2028, U+0085, VT, FF are data:
  ``bytes.splitlines`` splits on CR/LF only, which is exactly right (``str.splitlines`` is not).
  A CR at the very end of a read is held, so that an LF opening the next read is not taken for
  a second, blank line (case 3).
- One UTF-8 byte-order mark at the very start of the stream is stripped, even when it arrives
  split across reads; a second one is an ordinary character of the first field name (case 8).
- ``name: value`` loses exactly one leading space from the value; a line without a colon is a
  field with an empty value; ``:`` lines are comments; unknown fields are ignored (case 9).
- ``data`` lines are joined with LF. A blank line dispatches: nothing when no ``data`` line came
  (a bare ``id:`` or a heartbeat never yields an empty message, case 9), else a ``Message`` whose
  ``kind`` is the ``event`` field or ``""`` (the spec's default type ``"message"`` is reported as
  ``""``, so "no event field" stays distinguishable from ``event: message``).
- ``id`` sets the last-event-ID buffer unless it contains NUL; it persists across events, an empty
  one resets it to ``""``. The buffer is committed to ``last_event_id`` only at a blank line, so
  the id of an event cut by EOF is never committed (cases 2, 10).
- ``retry`` is honoured only when it is all ASCII digits (case 11).
- The stream is always UTF-8 (case 6) and is never repaired: a complete line that is not valid
  UTF-8 is ``INVALID_UTF8`` (docs/design.md decision 4, stricter than WHATWG's U+FFFD). An
  incomplete sequence in the unterminated tail is merely part of the event in flight (case 7).
- Size cap (case 12): ``FRAME_TOO_LARGE`` as soon as the message being assembled (data so far
  plus the value of an unterminated ``data`` line) exceeds ``max_event_bytes``, or the event's
  other lines (``id``, ``event``, comments, unknown fields, an unterminated non-data line) add up
  to more than ``max_event_bytes``. So a message of exactly the cap is accepted whatever its
  ``data:`` prefixes cost, and nothing buffers without bound. The cost of a line only grows with
  its prefix, so the verdict does not depend on where reads split it.

End of stream is the caller's business: ``in_progress`` says whether an event was cut. Comment
lines outside an event (heartbeats) never open one, even when cut mid-line, so a cut heartbeat
is a boundary, not a truncated message.

Decoding is written for throughput: each read is searched once, backwards, for its last line end;
the run of complete lines before it is validated in one pass (an ASCII check, a UTF-8 decode only
when non-ASCII bytes occur) and split by C code; Python touches each line once, never each byte.
"""

from __future__ import annotations

from reference_impl.errors import CodecError, ErrorCode, carrying
from reference_impl.events import Message

__all__ = ["BOM", "EventStreamParser"]

BOM = b"\xef\xbb\xbf"
_CR, _LF, _COLON = 0x0D, 0x0A, 0x3A
#: ``retry`` values longer than this are ignored: beyond int64 milliseconds they mean nothing,
#: and ``int()`` refuses digit strings past 4300 characters anyway.
_MAX_RETRY_DIGITS = 18


class EventStreamParser:
    """Turns an event-stream body, fed in any split, into ``Message`` events.

    Raises ``CodecError`` (``FRAME_TOO_LARGE``, ``INVALID_UTF8``); after one, discard the parser.
    """

    def __init__(self, max_event_bytes: int) -> None:
        self._max = max_event_bytes
        self._head: bytes | None = b""  # stream start while a BOM is still possible; then None
        self._held_cr = False  # the last line ended in a CR that was the last byte of a read
        self._held_cr_kept = False  # ... and that line is the last of ``_raw``
        self._tail = bytearray()  # the unterminated line; never contains CR or LF
        self._raw: list[bytes] = []  # complete lines of the event in flight, terminators kept
        self._in_event = False  # a field line arrived since the last blank line
        self._data: list[bytes] = []
        self._data_size = 0  # length of the spec's data buffer: every value plus its LF
        self._side_size = 0  # bytes of the event's non-data lines
        self._event_type = ""
        self._id_buffer = ""
        #: The last event ID string: the id in force at the last blank line. Send it as
        #: ``Last-Event-ID`` when reconnecting (only when non-empty).
        self.last_event_id = ""
        #: The last valid ``retry`` value in milliseconds, None if none came.
        self.retry_ms: int | None = None

    @property
    def in_progress(self) -> bool:
        """True when an event has started and not reached its blank line (EOF would cut it)."""
        if self._head or self._in_event:
            return True
        # An unterminated comment outside an event is a cut heartbeat, not a cut event.
        return bool(self._tail) and self._tail[0] != _COLON

    def partial(self) -> bytes:
        """Raw bytes of the event in flight since the last blank line; ``b""`` at a boundary."""
        if not self.in_progress:
            return b""
        return (self._head or b"") + b"".join(self._raw) + bytes(self._tail)

    def feed(self, data: bytes) -> list[Message]:
        """Parse the next piece of the body; return the messages it completes, in order."""
        if self._head is not None:
            data = self._skip_bom(data)
        start = 0
        if self._held_cr and data:
            self._held_cr = False
            if data[0] == _LF:  # second half of a CRLF split across reads
                start = 1
                if self._held_cr_kept:  # the LF ends that line's raw bytes, as in one read
                    self._raw.append(b"\n")
        last = max(data.rfind(b"\n", start), data.rfind(b"\r", start))
        if last < 0:
            self._grow_tail(data, start)
            return []
        if self._tail:
            self._tail += memoryview(data)[start : last + 1]
            block = bytes(self._tail)
            self._tail.clear()
        else:
            block = data[start : last + 1]
        self._held_cr = last == len(data) - 1 and data[last] == _CR
        # A comment (or a blank line) is no part of the raw event, and neither is its LF.
        self._held_cr_kept = self._held_cr and _is_kept(_last_line(block))
        messages = self._lines(block)
        with carrying(messages):
            self._grow_tail(data, last + 1)
        return messages

    def _skip_bom(self, data: bytes) -> bytes:
        """Hold the first bytes until they prove to be (or not to be) a BOM; strip it once."""
        head = (self._head or b"") + data
        if len(head) < len(BOM) and BOM.startswith(head):
            self._head = head
            return b""
        self._head = None
        return head[len(BOM) :] if head.startswith(BOM) else head

    def _lines(self, block: bytes) -> list[Message]:
        """Process a run of complete lines (``block`` ends with a line terminator)."""
        check_each = False
        if not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError:
                # CR and LF never occur inside a multi-byte sequence, so the run is valid exactly
                # when every line is. Recheck line by line to fail at the first bad one, in
                # stream order with the size checks, as a byte-at-a-time feed would.
                check_each = True
        messages: list[Message] = []
        with carrying(messages):  # once per run of lines, not per line: this is the hot path
            for raw in block.splitlines(keepends=True):
                line = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
                message = self._line(line, raw, check_each)
                if message is not None:
                    messages.append(message)
        return messages

    def _line(self, line: bytes, raw: bytes, check_utf8: bool) -> Message | None:
        """Interpret one complete line (``raw`` is the same line with its terminator)."""
        if not line:
            return self._dispatch()
        if line[0] == _COLON:
            self._check_size(self._side_size + len(line))
            if check_utf8:
                _check_utf8(line)
            if self._in_event:
                # A comment inside an event costs the event's size budget, but it is no byte of
                # the event: partial() leaves it out, so a heartbeat is never progress (catalogue
                # case 19; seed 000 gate 3 counts from the partial message's last byte).
                self._side_size += len(line)
            return None
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
        if name == b"data":
            size = self._data_size + len(value)
            self._check_size(size)
            if check_utf8:
                _check_utf8(line)
            self._data.append(value)
            self._data_size = size + 1
        else:
            self._check_size(self._side_size + len(line))
            if check_utf8:
                _check_utf8(line)
            self._side_size += len(line)
            self._field(name, value)
        self._in_event = True
        self._raw.append(raw)
        return None

    def _field(self, name: bytes, value: bytes) -> None:
        """Apply a non-data field; unknown names are ignored."""
        if name == b"event":
            self._event_type = value.decode("utf-8")
        elif name == b"id":
            if b"\0" not in value:
                self._id_buffer = value.decode("utf-8")
        elif name == b"retry" and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
            # bytes.isdigit() accepts ASCII digits only, never "+5", "-1", "1_000" or " 5".
            self.retry_ms = int(value)

    def _dispatch(self) -> Message | None:
        """A blank line: commit the id, emit the event if it carried data, reset the buffers."""
        self.last_event_id = self._id_buffer
        message = None
        if self._data:
            message = Message(b"\n".join(self._data), self._event_type, self._id_buffer)
        self._data = []
        self._data_size = self._side_size = 0
        self._event_type = ""
        self._raw = []
        self._in_event = False
        return message

    def _grow_tail(self, data: bytes, start: int) -> None:
        """Buffer the unterminated line, refusing it once it is provably too large."""
        if start >= len(data):
            return
        tail = self._tail
        tail += memoryview(data)[start:]
        if tail.startswith(b"data:"):
            self._check_size(self._data_size + len(tail) - (6 if tail.startswith(b"data: ") else 5))
        elif not b"data:".startswith(tail):  # a prefix of "data:" may still become a data line
            self._check_size(self._side_size + len(tail))

    def _check_size(self, size: int) -> None:
        if size > self._max:
            raise CodecError(ErrorCode.FRAME_TOO_LARGE, f"event above {self._max} bytes")


def _last_line(block: bytes) -> bytes:
    """The last line of ``block``, which ends with a CR, without that CR."""
    end = len(block) - 1
    return block[max(block.rfind(b"\n", 0, end), block.rfind(b"\r", 0, end)) + 1 : end]


def _is_kept(line: bytes) -> bool:
    """Does ``_line`` keep this line in the raw event? Field lines only: comments and blank
    lines are no bytes of the event."""
    return bool(line) and line[0] != _COLON


def _check_utf8(line: bytes) -> None:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(ErrorCode.INVALID_UTF8, f"line byte {exc.start}: {exc.reason}") from None
