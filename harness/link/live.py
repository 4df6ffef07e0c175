"""The live stream: one direction of one connection, learnt as the proxy relays it.

A fault is placed where the live stream really is, never where a dry run says it should be:
the proxy hands every read of a direction's source to a ``LiveStream`` before the faults see
it (``Leg.observe``), and the faults ask it where their positions are (the ``Locator``
protocol). It also keeps what the judge needs from the wire: the messages the source really
sent, decoded by the framing's sans-IO codec, and whether it reached its own end.

- ``offset``: known at once. ``match``: the first occurrence, searched across reads.
  ``utf8_char``: the k-th multi-byte UTF-8 character, counted as the bytes pass.
- ``frame`` (with ``frame_offset``/``fraction``), ``frame_span``, ``length_field``: frames are
  what the reference consumer's codec decodes (``make_monitor``). Frame 1 starts after the
  framing's setup (the HTTP response head; on gRPC the HTTP/2 frames up to and including the
  response's HEADERS); frame k+1 starts where frame k ends; a frame ends where the codec
  completes it, plus the CRLF that closes its HTTP chunk when the event ends its chunk.
  Reads are decoded a byte at a time while a fault of the leg may still ask for a frame that
  has not ended (``wanted_frames``), so those bounds are exact; other reads are decoded whole
  (their messages are exact, their frames' bounds are not kept: a fault asking for one later
  is told so, never given a guess). At most ``MAX_EXACT_BYTES`` go a byte at a time.

Until a position is known ``offset`` is None and ``not_before`` says how far bytes may pass.
A position the stream shows it will never have (frame 9 of a stream that ended after 6)
raises ``PositionError``: the fault then lets everything pass and records why, and the case
is inconclusive (I5), never a pass.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.errors import PositionError
from harness.faults.position import Position
from harness.faults.stage import LinkShape
from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message, StreamEnd
from reference_impl.framing import FramingName, FramingOptions, layout, make_monitor
from reference_impl.framing.base import ClientCodec
from reference_impl.framing.options import DEFAULT_MAX_MESSAGE_BYTES
from reference_impl.ledger import WINDOW, Ledger
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.payload.registry import payload as payload_kind
from reference_impl.payload.sides import Ending, PayloadSide
from reference_impl.report import preview

LENGTH_WIDTH = 4
#: bytes of a response head kept while looking for its end
MAX_HEAD_BYTES = 64 * 1024
#: bytes of one direction decoded one at a time at most (a fault waiting for frame 10^6 of a
#: 1 GiB stream): past them frame bounds are not tracked and a fault asking for one is told so
MAX_EXACT_BYTES = 16 << 20
#: framings whose messages end only on these bytes (a line's end: NDJSON's LF, over HTTP too;
#: SSE's blank line, CR or LF, and its chunked body's CRLFs)
_LINE_ENDS: dict[str, re.Pattern[bytes]] = {
    FramingName.NDJSON: re.compile(rb"\n"),
    FramingName.NDJSON_HTTP: re.compile(rb"\n"),
    FramingName.SSE: re.compile(rb"[\r\n]"),
}
#: framings whose message is an HTTP/1.1 response body's: a message ending its chunk owns the
#: chunk's closing CRLF
_HTTP_BODY = (FramingName.SSE, FramingName.NDJSON_HTTP)
#: ``wanted_frames`` of a leg whose faults may ask for any frame (a merge counting frames from
#: a byte offset or a match)
EVERY_FRAME = 1 << 62
MAX_PREVIEWS = 256
#: the largest message a live stream decodes, whatever the link's own limit below it: past the
#: larger of the two the stream is not decoded (``LiveStream.over_limit``), so a peer's
#: unterminated message costs at most this much per decoder
MIN_MONITOR_BYTES = DEFAULT_MAX_MESSAGE_BYTES
#: the first bytes of a stream kept as they came (to say what a stream of another protocol is)
OPENING_BYTES = 64


@dataclass(frozen=True, slots=True)
class LinkTraits:
    """What a live stream decodes with: the framing and its options, and the payload whose
    completion proof and content rule apply (None: a raw byte stream)."""

    framing: str | None = None
    options: FramingOptions = field(default_factory=FramingOptions)
    payload: str | None = None
    profile: str = "openai"
    #: the consumer's direction of a link of ``framing``: its request is found, not decoded
    request: bool = False

    @property
    def shape(self) -> LinkShape:
        """What faults whose bytes depend on the framing (heartbeats) are told of the link."""
        return LinkShape(
            self.framing,
            self.options.sse_body == "chunked",
            profile=self.profile if self.payload == "tokens" else None,
            ws_text=self.options.ws_text,
        )

    @property
    def has_end(self) -> bool:
        """The framing has an explicit end (else a clean close is the producer's end)."""
        if self.framing in _RAW:
            return False
        return not (self.framing in _HTTP_BODY and self.options.sse_body == "close")


class _Utf8Counter:
    """Multi-byte UTF-8 characters as bytes pass. A lead byte counts only with all its
    continuation bytes: framing bytes (a length prefix of 0xC5) are no characters."""

    def __init__(self) -> None:
        self.starts: list[int] = []  # offset of each character's lead byte, while wanted
        self.widths: list[int] = []
        self.wanted = 0
        self._carry = b""  # the start of a character whose rest is in the next read

    def feed(self, data: bytes, start: int) -> None:
        if len(self.starts) >= self.wanted:
            self._carry = b""
            return
        window, base = self._carry + data, start - len(self._carry)
        index = 0
        while index < len(window) and len(self.starts) < self.wanted:
            byte = window[index]
            if 0xC2 <= byte <= 0xF4:
                width = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                tail = window[index + 1 : index + width]
                if len(tail) < width - 1:
                    break  # the rest of this character comes in the next read
                if all(0x80 <= b <= 0xBF for b in tail):
                    self.starts.append(base + index)
                    self.widths.append(width)
            index += 1
        self._carry = window[index:]

    @property
    def idle(self) -> bool:
        """``feed`` would do nothing: no more characters wanted, none started in the last read."""
        return len(self.starts) >= self.wanted and not self._carry


class LiveStream:
    """The ``Locator`` of one direction of one connection, and what it saw (see the module
    docstring). ``wanted_frames``: the highest frame a fault of this leg names (0: none)."""

    def __init__(self, traits: LinkTraits, wanted_frames: int = 0) -> None:
        self.traits = traits
        self.wanted_frames = wanted_frames
        self.seen = 0  # bytes observed
        self.opening = b""  # the first OPENING_BYTES of them
        self.codec: ClientCodec | None = None
        #: where the consumer's request ends, once known (a request stream only)
        self.request_end: int | None = None
        if traits.request:
            self.request_end = 0 if traits.framing in (None, *_RAW) else None
        elif traits.framing is not None:
            self.codec = self._monitor()
        self.head_end: int | None = 0 if traits.framing in (None, *_RAW) or traits.request else None
        self._head = bytearray()
        self._head_lost = False  # no setup within MAX_HEAD_BYTES: frames are not placed
        self._chunked = False
        #: an HTTP body's stream: a message owns its chunk's CRLF, an SSE event dispatched at
        #: a CR the LF after it (``_close_trailer``)
        self._sse = traits.framing in _HTTP_BODY and not traits.request
        #: where each of the first ``WINDOW`` frames' bytes end (None: not yet known); past
        #: them only the count and the last frame's end are kept
        self.ends: list[int | None] = []
        self.frames = 0
        self._last_end: int | None = None  # the end of the last frame whose end is known
        self._tail_open = False  # a frame past the window whose end is not yet known
        #: the largest message the codecs decode: the link's limit, at least
        #: ``MIN_MONITOR_BYTES`` (past it the stream is no longer decoded: ``over_limit``)
        self.limit = max(traits.options.max_message_bytes, MIN_MONITOR_BYTES)
        self.inexact = 0  # frames from this one on (1-based) have no exact bounds
        self._exact_left = MAX_EXACT_BYTES
        self.sizes: list[int] = []  # payload bytes of each message in the ledger's window
        #: the messages the source sent, in order: the first as digests, the rest tallied
        self.ledger = Ledger(recent=True)
        self.previews: dict[str, str] = {}
        self.content = 0  # how many leading messages carry the result
        self._token_frames: list[int] = []  # on a token stream: the messages with a token
        self._tokens_count = 0  # of them, past the window too
        self._tokens_through = 0  # the index after the last of them
        self.stream_end: StreamEnd | None = None
        self.error: CodecError | None = None  # the source does not speak the framing
        self.error_at = 0  # the end of the read that brought the error
        self.eof: str | None = None  # "eof" or "rst": how the source ended, once it did
        self._side: PayloadSide | None = None
        self._refused_at: int | None = None  # messages fed when the payload refused one
        if traits.payload is not None:
            config = ConsumerConfig(traits.framing or "", traits.payload, traits.profile)
            self._side = payload_kind(traits.payload).side(config)
        self._texts: dict[str, int | None] = {}
        self._text_tail = b""
        self._chars = _Utf8Counter()
        self._trailer_at: int | None = None  # an SSE event's end, awaiting its LF and CRLF
        self._window = b""  # the bytes of the last read (and a few before), for the trailer
        self._window_start = 0
        #: what the destination got (after the faults), decoded the same way; None: not kept
        self.delivered: LiveStream | None = None
        #: how the proxy ended the leg (``HowEnded``'s spelling), once it did
        self.closed: str | None = None

    def _monitor(self) -> ClientCodec:
        traits = self.traits
        assert traits.framing is not None
        options = FramingOptions(
            max_message_bytes=max(traits.options.max_message_bytes, MIN_MONITOR_BYTES),
            sse_body=traits.options.sse_body,
            ws_text=traits.options.ws_text,
            request=traits.options.request,
        )
        return make_monitor(traits.framing, options)

    def watch_delivery(self) -> LiveStream:
        """Also decode what the proxy writes to the destination (for judging I2)."""
        self.delivered = LiveStream(self.traits)
        return self.delivered

    # -- learning ---------------------------------------------------------------------------
    def observe(self, data: bytes) -> None:
        # Called for every read a watched leg makes (a thread's too): what no fault asked for
        # is skipped before a call is made.
        start = self.seen
        self.seen += len(data)
        if start < OPENING_BYTES:
            self.opening += data[: OPENING_BYTES - start]
        if self._texts:
            self._search(data, start)
        if not self._chars.idle:
            self._chars.feed(data, start)
        if not self._head_lost:
            if self.head_end is None:
                self._find_head(data, start)
            if self.request_end is None and self.traits.request:
                self._find_request_end(data, start)
        if self._sse:  # only an SSE event's trailer looks back at the bytes
            self._window = self._window[-3:] + data
            self._window_start = start - (len(self._window) - len(data))
        if self._trailer_at is not None:
            self._close_trailer()
        if self.codec is not None and self.error is None:
            self._decode(data, start)

    def observe_written(self, data: bytes) -> None:
        if self.delivered is not None:
            self.delivered.observe(data)

    def observe_closed(self, how: str) -> None:
        """The proxy ended the leg: the destination saw the source's own FIN only when the
        leg relayed it (``eof``); a fault's FIN or RST is no end of the producer's."""
        self.closed = how
        if self.delivered is not None:
            self.delivered.observe_end("eof" if how == "eof" else "cut")

    def observe_end(self, how: str) -> None:
        """The source ended: ``"eof"`` (FIN), ``"rst"``; or ``"cut"`` (a fault ended what this
        stream saw)."""
        self.eof = how
        if self._trailer_at is not None:
            self._close_trailer(final=True)  # no more bytes will come: what came is all
        if how == "eof" and self.codec is not None and self.error is None:
            try:
                self._take(self.codec.receive_eof(), self.seen, exact=False)
            except CodecError as err:
                self._take(err.events, self.seen, exact=False)
                self.error = err

    def _decode(self, data: bytes, start: int) -> None:
        assert self.codec is not None
        done = 0
        try:
            if self.frames < self.wanted_frames and len(data) <= self._exact_left:
                done = self._decode_exactly(data, start)
                self._exact_left -= done
            if done < len(data):
                if not self.inexact:
                    self.inexact = self.frames + 1  # the frame in flight ends in ``data``
                self._take(self.codec.receive_data(data[done:]), start + len(data), exact=False)
        except CodecError as err:
            self._take(err.events, start + len(data), exact=False)
            self.error, self.error_at = err, start + len(data)
            if err.code == ErrorCode.FRAME_TOO_LARGE:
                self.codec = self._monitor()  # never fed again: let go of what the old one held
        self.codec.data_to_send()  # what a consumer would answer is the consumer's to send

    def _decode_exactly(self, data: bytes, start: int) -> int:
        """Feed ``data`` so that each message's end is known to the byte, until the frames the
        faults want are known; returns how many bytes that took (the rest goes in bulk). On
        line framings a message ends only on a line's end, so the bytes between two CR/LF go
        in one piece (a 16 MiB line took minutes a byte at a time); elsewhere a byte at a
        time."""
        assert self.codec is not None
        enders = _LINE_ENDS.get(self.traits.framing or "") if not self.traits.request else None
        if enders is None:
            for index in range(len(data)):
                events = self.codec.receive_data(data[index : index + 1])
                self._take(events, start + index + 1, exact=True)
                if self.frames >= self.wanted_frames:
                    return index + 1
            return len(data)
        done = 0
        for found in enders.finditer(data):
            end = found.end()
            if end - 1 > done:
                self._take_unended(self.codec.receive_data(data[done : end - 1]), start + end - 1)
            self._take(self.codec.receive_data(data[end - 1 : end]), start + end, exact=True)
            done = end
            if self.frames >= self.wanted_frames:
                return done
        if done < len(data):
            self._take_unended(self.codec.receive_data(data[done:]), start + len(data))
        return len(data)

    def _take_unended(self, events: Sequence[object], at: int) -> None:
        """Events of bytes holding no line end: none should complete a message; if one did,
        its end is not known to the byte (and is never guessed)."""
        if any(isinstance(event, Message) for event in events) and not self.inexact:
            self.inexact = self.frames + 1
        self._take(events, at, exact=False)

    def _take(self, events: Sequence[object], at: int, *, exact: bool) -> None:
        for event in events:
            if isinstance(event, StreamEnd):
                self.stream_end = event
            elif isinstance(event, Message):
                self._message(event, at, exact)

    def _message(self, message: Message, at: int, exact: bool) -> None:
        digest = hashlib.sha256(message.data).hexdigest()
        self.ledger.add(digest)
        if len(self.sizes) < WINDOW:
            self.sizes.append(len(message.data))
        if len(self.previews) < MAX_PREVIEWS:
            self.previews.setdefault(digest, preview(message.data))
        self.frames += 1
        if len(self.ends) < WINDOW:
            self.ends.append(None)
        else:
            self._tail_open = True
        if exact and self._sse:
            self._trailer_at = at
            self._close_trailer()
        else:
            self._set_end(at)
        self._feed_payload(message)

    def _feed_payload(self, message: Message) -> None:
        if self._side is None or self._refused_at is not None:
            return
        before = self._tokens()
        try:
            self._side.feed(message)
        except CodecError:
            self._refused_at = self.ledger.count - 1  # this message broke the payload's rules
            return
        if self.traits.payload != "tokens":
            self.content = self.ledger.count
        elif self._tokens() != before:
            self.content = self._tokens_through = self.ledger.count
            self._tokens_count += 1
            if self.ledger.count <= WINDOW:
                self._token_frames.append(self.ledger.count - 1)

    def _tokens(self) -> int:
        tracker = getattr(self._side, "tracker", None)
        return int(getattr(tracker, "received_tokens", 0))

    def _close_trailer(self, *, final: bool = False) -> None:
        """A message of an HTTP body owns the bytes that end it on the wire: an SSE event the
        LF of a blank line ended by CRLF (the codec dispatches at the CR, since a lone CR ends a
        line too); then, when the message ended its HTTP chunk, the chunk's CRLF (as on a
        prepared link)."""
        at = self._trailer_at
        if at is None:
            return
        index = at - self._window_start
        crlf = index >= 1 and self._window[index - 1 : index] == b"\r"
        if not final and self.seen - at < crlf + 2 * self._chunked:
            return  # the bytes that decide have not all come
        self._trailer_at = None
        if crlf and self._window[index : index + 1] == b"\n":
            at, index = at + 1, index + 1
        if self._chunked and self._window[index : index + 2] == b"\r\n":
            at += 2
        self._set_end(at)

    def _set_end(self, end: int) -> None:
        self._last_end = end
        if self._tail_open:
            self._tail_open = False
            return
        for index in range(len(self.ends) - 1, -1, -1):
            if self.ends[index] is None:
                self.ends[index] = end
                return

    def _find_head(self, data: bytes, start: int) -> None:
        self._head += data
        base = start + len(data) - len(self._head)
        if self.traits.framing == FramingName.GRPC:
            found = layout.http2_response_start(bytes(self._head))
            if found is not None:
                self.head_end = base + found
                self._head.clear()
            self._head_lost = len(self._head) > MAX_HEAD_BYTES
            return
        found = bytes(self._head).find(b"\r\n\r\n")
        if found < 0:
            if len(self._head) > MAX_HEAD_BYTES:
                del self._head[: len(self._head) - MAX_HEAD_BYTES]
            return
        head = bytes(self._head[: found + 4]).lower()
        self.head_end = base + found + 4
        chunked = b"transfer-encoding: chunked" in head
        self._chunked = self.traits.framing in _HTTP_BODY and chunked
        self._head.clear()

    def _find_request_end(self, data: bytes, start: int) -> None:
        self._head += data
        base = start + len(data) - len(self._head)
        if self.traits.framing == FramingName.GRPC:
            found = layout.http2_request_end(bytes(self._head))
        else:
            end = bytes(self._head).find(b"\r\n\r\n")
            found = None if end < 0 else end + 4 + _body_length(bytes(self._head[:end]))
        if found is not None:
            self.request_end = base + found
            self._head.clear()
        elif len(self._head) > MAX_HEAD_BYTES:
            self._head_lost = True  # a request this long is no request of these framings
            self._head.clear()

    def _search(self, data: bytes, start: int) -> None:
        pending = [text for text, at in self._texts.items() if at is None]
        if not pending:
            return
        window, base = self._text_tail + data, start - len(self._text_tail)
        for text in pending:
            found = window.find(text.encode())
            if found >= 0:
                self._texts[text] = base + found
        longest = max(len(t.encode()) for t in pending)
        self._text_tail = window[-(longest - 1) :] if longest > 1 else b""

    # -- what the judge reads -----------------------------------------------------------------
    @property
    def reached_end(self) -> bool:
        """The source reached its own end: the framing's explicit end, its payload's completion
        proof, or (on a framing without an explicit end) a clean close."""
        if self.stream_end is not None or self._payload_complete():
            return True
        return not self.traits.has_end and self.eof == "eof" and self.error is None

    @property
    def digests(self) -> list[str]:
        """The digests of the messages in the ledger's window (the first ``WINDOW``)."""
        return self.ledger.window

    @property
    def carrying(self) -> tuple[str, ...]:
        """The messages that carry the result, of those in the window: every one up to
        ``content``, but on a token stream only those with a token (a client may keep a
        ``ping`` or a ``message_start`` to itself; the result is the tokens)."""
        if self.traits.payload == "tokens":
            return tuple(self.digests[i] for i in self._token_frames)
        return tuple(self.digests[: self.content])

    @property
    def carrying_count(self) -> int:
        """How many messages carry the result, past the window too."""
        return self._tokens_count if self.traits.payload == "tokens" else self.content

    @property
    def carrying_through(self) -> int:
        """How many leading messages hold every one that carries the result."""
        return self._tokens_through if self.traits.payload == "tokens" else self.content

    @property
    def over_limit(self) -> str:
        """Why the stream is no longer decoded when a message went past ``limit`` ('' when
        none did)."""
        if self.error is None or self.error.code != ErrorCode.FRAME_TOO_LARGE:
            return ""
        return (
            f"the service sent a message of more than {self.limit} bytes after "
            f"{self.ledger.count} messages; the link's limit is {mib(self.limit)} "
            f"({self.error.detail}): not decoded past byte {self.error_at}"
        )

    @property
    def payload_accepted(self) -> int:
        """Leading messages the payload's own checks accept (all of them: no payload)."""
        return self.ledger.count if self._refused_at is None else self._refused_at

    def _payload_complete(self) -> bool:
        if self._side is None or self._refused_at is not None:
            return False
        ending = Ending(self.eof or "open", self.error, b"", self.stream_end)
        return bool(self._side.finished(ending))

    def spans(self, limit: int) -> tuple[tuple[int, int], ...]:
        """``[start, end)`` of the first frames whose bounds are exact (at most ``limit``)."""
        found: list[tuple[int, int]] = []
        start = self.head_end
        for index, end in enumerate(self.ends[:limit], start=1):
            if start is None or end is None or (self.inexact and index >= self.inexact):
                break
            found.append((start, end))
            start = end
        return tuple(found)

    # -- the Locator protocol -----------------------------------------------------------------
    def offset(self, position: Position) -> int | None:
        if position.offset is not None:
            return position.offset
        if position.match is not None:
            return self._match(position.match)
        if position.utf8_char is not None:
            return self._char(position.utf8_char, position.char_byte)
        if position.request_end is not None:
            return self._request_end()
        if position.frame is not None:
            if self.codec is None:
                raise PositionError("frame positions need the link's framing", path=("frame",))
            return self._in_frame(position)
        raise PositionError("a time position (after_ms) has no byte offset", path=("after_ms",))

    def not_before(self, position: Position) -> int:
        if position.match is not None:
            return max(0, self.seen - len(position.match.encode()) + 1)
        if position.utf8_char is not None:
            return self.seen - len(self._chars._carry)
        if position.frame is not None:
            try:
                start = self._start(position.frame)
            except PositionError:
                return self.seen  # ``offset`` says why
            if start is not None:
                return start
            if self.head_end is None:
                # The setup has not ended (an HTTP/2 server preface before the request): frame
                # 1 starts past every byte seen, which must pass, since a client may send its
                # request only once it has them (grpcio waits for the server's SETTINGS).
                return self.seen
            return self.head_end if self._last_end is None else self._last_end
        return self.seen

    def frame_span(self, index: int) -> tuple[int, int] | None:
        if self.codec is None:
            raise PositionError("frame positions need the link's framing", path=("frame",))
        self.wanted_frames = max(self.wanted_frames, index)
        if self.inexact and index >= self.inexact:
            message = f"frame {index}'s bounds were not tracked (decoded in bulk)"
            raise PositionError(message, path=("frame",))
        start = self._start(index)
        end = self.ends[index - 1] if index <= len(self.ends) else None
        if end is None and index > WINDOW:
            message = f"frame {index}'s bounds were not kept (past frame {WINDOW})"
            raise PositionError(message, path=("frame",))
        if start is None or end is None:
            # past the framing's own end no frame comes, though the connection stays open (a
            # keep-alive server): waiting for the close would hold the end back from the consumer
            over = self._over() or self.stream_end is not None
            if over and index > self.frames:
                message = f"the stream had {self.frames} frames, not {index}"
                raise PositionError(message, path=("frame",))
            return None
        return start, end

    def length_field(self, index: int) -> tuple[int, int] | None:
        framing = self.traits.framing
        if framing not in (FramingName.LENGTH_PREFIXED, FramingName.GRPC):
            message = f"framing {framing} has no length prefix in frame {index}"
            raise PositionError(message, path=("frame",))
        span = self.frame_span(index)
        if span is None:
            return None
        if framing == FramingName.LENGTH_PREFIXED:
            return span[0], LENGTH_WIDTH
        # gRPC: the u32 right before the message's bytes, at the end of its DATA frame
        return span[1] - self.sizes[index - 1] - LENGTH_WIDTH, LENGTH_WIDTH

    def _over(self) -> bool:
        return self.eof is not None or self.error is not None

    def _start(self, index: int) -> int | None:
        if self.inexact and index > self.inexact:
            message = f"frame {index}'s start was not tracked (decoded in bulk)"
            raise PositionError(message, path=("frame",))
        if index == 1:
            return self.head_end
        if index - 1 > WINDOW:
            message = f"frame {index}'s start was not kept (past frame {WINDOW})"
            raise PositionError(message, path=("frame",))
        return self.ends[index - 2] if index - 1 <= len(self.ends) else None

    def _in_frame(self, position: Position) -> int | None:
        assert position.frame is not None
        if position.fraction is not None:
            span = self.frame_span(position.frame)
            return None if span is None else span[0] + int(position.fraction * (span[1] - span[0]))
        self.wanted_frames = max(self.wanted_frames, position.frame)
        start = self._start(position.frame)
        if start is None:
            self.frame_span(position.frame)  # raises once the stream is over without it
            return None
        if position.frame_offset is None:
            return start
        span = self.frame_span(position.frame)
        if span is not None and position.frame_offset >= span[1] - span[0]:
            message = f"frame {position.frame} has {span[1] - span[0]} bytes on the wire"
            raise PositionError(message, path=("frame_offset",))
        return start + position.frame_offset

    def _request_end(self) -> int | None:
        if not self.traits.request:
            message = "the request's end is a position of the consumer's direction (upstream)"
            raise PositionError(message, path=("request_end",))
        if self.request_end is None and (self._over() or self._head_lost):
            raise PositionError("the consumer's request never ended", path=("request_end",))
        return self.request_end

    def _match(self, text: str) -> int | None:
        found = self._texts.setdefault(text, None)
        if found is None and self._over():
            raise PositionError(f"{text!r} did not occur in the stream", path=("match",))
        return found

    def _char(self, k: int, char_byte: int) -> int | None:
        self._chars.wanted = max(self._chars.wanted, k)
        if len(self._chars.starts) < k:
            if self._over():
                count = len(self._chars.starts)
                message = f"the stream had {count} multi-byte characters, not {k}"
                raise PositionError(message, path=("utf8_char",))
            return None
        width = self._chars.widths[k - 1]
        if not 1 <= char_byte < width:
            raise PositionError(f"character {k} has {width} bytes", path=("char_byte",))
        return self._chars.starts[k - 1] + char_byte


def _body_length(head: bytes) -> int:
    """The ``Content-Length`` of an HTTP/1.1 request head (0: none): the request ends after its
    body (a POST's JSON), not at the blank line."""
    found = _CONTENT_LENGTH.search(head)
    return int(found.group(1)) if found else 0


_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d{1,12})[ \t]*(?=\r\n|$)", re.IGNORECASE)
#: framings without a setup before their first frame
_RAW = (FramingName.LENGTH_PREFIXED, FramingName.NDJSON)


def mib(size: int) -> str:
    """A byte count for people: in MiB when it is whole MiB, else in bytes."""
    return f"{size >> 20} MiB" if size and size % (1 << 20) == 0 else f"{size} bytes"
