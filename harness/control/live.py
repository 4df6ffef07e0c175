"""A locator that learns where frames and matches are while the stream flows (no prepared link).

A case knows its stream before it runs (``harness/link/locator.py``); a proxy in front of a
real service does not. ``LiveLocator`` sees every read of one direction before the faults do
(``Leg.observe``) and answers the faults' questions about what it has seen:

- ``match``: the first occurrence of the text, searched across reads.
- ``frame`` (with ``frame_offset``, ``fraction``), ``frame_span``: the reference consumer's
  codec of the proxy's framing decodes the stream; a message ends where the codec completes it.
  While some fault waits for a frame that has not ended yet, reads are fed to the codec one
  byte at a time, so that frame's end is exact; otherwise a whole read at a time (a frame that
  ended inside such a read is placed at the read's end: it is in the past by then, and a fault
  placed at a past position fires at once). Frame 1 starts after the HTTP head on ``sse`` and
  ``websocket``; on ``grpc`` it includes the HTTP/2 setup frames.
- ``length_field``: the 4-byte prefix at a frame's start, on ``length-prefixed`` only.

Until a position is known ``offset`` is None and ``not_before`` says how far bytes may go on.
A stream the codec cannot decode stops answering (faults waiting for a frame then never fire).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import PositionError
from harness.faults.position import Position
from reference_impl.errors import CodecError
from reference_impl.events import Message
from reference_impl.framing import FramingOptions, make_client
from reference_impl.framing.base import ClientCodec

#: framings whose stream starts with an HTTP response head
HTTP_HEAD = ("sse", "websocket")
LENGTH_WIDTH = 4
#: never decode more than this per read byte by byte (a fault waiting for frame 10^6)
MAX_EXACT_BYTES = 1 << 20
#: the response head kept while looking for its end
MAX_HEAD_BYTES = 16 * 1024
CHUNK_TRAILER = len(b"\r\n")


class LiveLocator:
    def __init__(self, framing: str | None = None) -> None:
        self.framing = framing
        self.codec: ClientCodec | None = None
        if framing:
            self.codec = make_client(framing, FramingOptions(max_message_bytes=1 << 30))
            self.codec.initiate()  # what a consumer sends first; the proxy only watches
            self.codec.data_to_send()
        self.seen = 0
        #: end offset of each completed frame
        self.ends: list[int] = []
        self.head_end: int | None = None if framing in HTTP_HEAD else 0
        self._head_buffer = b""
        self._chunked = False
        self.wanted_frame = 0
        self._texts: dict[str, int | None] = {}
        self._tail = b""
        self.dead = False

    # -- learning ---------------------------------------------------------------------------
    def observe(self, data: bytes) -> None:
        start = self.seen
        self._search(data, start)
        if self.head_end is None:
            self._find_head(data, start)
        if self.codec is not None and not self.dead:
            exact = self.wanted_frame > len(self.ends) and len(data) <= MAX_EXACT_BYTES
            try:
                if exact:
                    for index in range(len(data)):
                        self._count(
                            self.codec.receive_data(data[index : index + 1]), start + index + 1
                        )
                else:
                    self._count(self.codec.receive_data(data), start + len(data))
                self.codec.data_to_send()  # acknowledgements the consumer would send: not ours
            except CodecError:
                self.dead = True
        self.seen += len(data)

    def _count(self, events: Sequence[object], end: int) -> None:
        for event in events:
            if isinstance(event, Message):
                # A chunked SSE event is dispatched at its blank line; the chunk's CRLF after
                # it still belongs to the frame (as on a prepared link).
                self.ends.append(end + (CHUNK_TRAILER if self._chunked else 0))

    def _find_head(self, data: bytes, start: int) -> None:
        window = self._head_buffer + data
        found = window.find(b"\r\n\r\n")
        if found >= 0:
            self.head_end = start - len(self._head_buffer) + found + 4
            head = window[: found + 4].lower()
            self._chunked = self.framing == "sse" and b"transfer-encoding: chunked" in head
            self._head_buffer = b""
        else:
            self._head_buffer = window[-MAX_HEAD_BYTES:]

    def _search(self, data: bytes, start: int) -> None:
        pending = [text for text, at in self._texts.items() if at is None]
        if not pending:
            return
        window = self._tail + data
        base = start - len(self._tail)
        for text in pending:
            found = window.find(text.encode())
            if found >= 0:
                self._texts[text] = base + found
        longest = max((len(t.encode()) for t in self._texts), default=1)
        self._tail = window[-(longest - 1) :] if longest > 1 else b""

    # -- the Locator protocol ---------------------------------------------------------------
    def offset(self, position: Position) -> int | None:
        if position.offset is not None:
            return position.offset
        if position.match is not None:
            return self._match(position.match)
        if position.frame is not None:
            span = self.frame_span(position.frame)  # also says the frame is wanted
            start = self._start(position.frame)
            if position.fraction is not None:
                return (
                    None if span is None else span[0] + int(position.fraction * (span[1] - span[0]))
                )
            if start is None or position.frame_offset is None:
                return start
            if span is not None and position.frame_offset >= span[1] - span[0]:
                message = f"frame {position.frame} has {span[1] - span[0]} bytes on the wire"
                raise PositionError(message, path=("frame_offset",))
            return start + position.frame_offset
        raise PositionError(
            f"{position.anchor} positions cannot be placed on a live stream",
            path=(position.anchor,),
        )

    def not_before(self, position: Position) -> int:
        if position.match is not None:
            return max(0, self.seen - len(position.match.encode()) + 1)
        if position.frame is not None:
            start = self._start(position.frame)
            if start is not None:
                return start
            return self.ends[-1] if self.ends else (self.head_end or 0)
        return self.seen

    def frame_span(self, index: int) -> tuple[int, int] | None:
        if self.codec is None:
            raise PositionError("frame positions need the proxy's framing", path=("frame",))
        self.wanted_frame = max(self.wanted_frame, index)
        start = self._start(index)
        if start is None or index > len(self.ends):
            return None
        return start, self.ends[index - 1]

    def length_field(self, index: int) -> tuple[int, int] | None:
        if self.framing != "length-prefixed":
            message = f"a live {self.framing or 'raw'} stream has no length field to change"
            raise PositionError(message, path=("frame",))
        self.wanted_frame = max(self.wanted_frame, index)
        start = self._start(index)
        return None if start is None else (start, LENGTH_WIDTH)

    def _start(self, index: int) -> int | None:
        if index == 1:
            return self.head_end
        return self.ends[index - 2] if index - 1 <= len(self.ends) else None

    def _match(self, text: str) -> int | None:
        if text not in self._texts:
            self._texts[text] = None
        return self._texts[text]
