"""gRPC server streaming over HTTP/2 on h2 (grpc/grpc ``doc/PROTOCOL-HTTP2.md``).

The client opens one stream: a POST to ``options.path`` with ``content-type: application/grpc``,
``te: trailers`` and the link's request headers as metadata, one request message (the link's
request body; empty by default), END_STREAM. The server answers ``:status 200``,
then sends each message as a Length-Prefixed-Message (``00``, u32 big-endian length, bytes) in
DATA frames, and ends with trailers carrying ``grpc-status`` (``0``, or ``13`` with a
``grpc-message``). DATA frame boundaries have no relation to message boundaries (catalogue 36).

Client ends and errors:

- trailers (or a Trailers-Only response) -> ``StreamEnd(ok=status == 0, "grpc-status N")``;
  trailers without a valid ``grpc-status``, a ``200`` response that is not ``application/grpc``,
  and every h2 protocol error -> ``PROTOCOL_ERROR``; a ``:status`` other than 2xx ->
  ``HTTP_STATUS``;
- END_STREAM or EOF inside a message (its 5-byte prefix included) -> ``FRAME_TRUNCATED``
  (catalogue 37); END_STREAM or EOF between messages without trailers -> ``STREAM_END_MISSING``,
  because a stream without trailers is truncated (catalogue 38);
- RST_STREAM, or GOAWAY with an error code -> ``REMOTE_ERROR`` (catalogue 39);
- compressed flag 1 (never negotiated) -> ``PROTOCOL_ERROR``; any other flag but 0 ->
  ``MALFORMED_FRAME`` (catalogue 42); a declared length above ``max_message_bytes`` ->
  ``FRAME_TOO_LARGE`` as soon as the prefix is in (catalogue 41).

h2 hands out a DATA frame only when all of it has arrived, but a cut usually falls inside one:
our server puts each message of up to 16 KiB in a DATA frame of its own. So ``_FrameWatcher``
follows the HTTP/2 frame boundaries of the received bytes alongside h2 and keeps the payload of
the incomplete DATA frame. A cut there is inside a message (``FRAME_TRUNCATED``), and
``partial()`` / ``expected_size()`` include those bytes. A cut inside any other frame (headers,
trailers, settings) at a message boundary stays ``STREAM_END_MISSING``. Messages themselves are
only produced from DATA frames h2 has checked.

What is delivered never depends on how the reads split the stream (``base.py``), errors
included. So h2 is fed one frame per call (it raises without the events of the frames before
the bad one), and a bad prefix found ahead in the incomplete DATA frame raises with the
messages before it, and only where h2 will take that frame (after the response headers,
outside a header block, before a GOAWAY): elsewhere h2's refusal of the whole frame decides.

Flow control: the client grants a 1 MiB window (stream and connection) and acknowledges each
DATA frame as it reads it, so h2 returns credit in ``data_to_send()``. The server never exceeds
its window: framed bytes that do not fit wait in a queue (``blocked``) until WINDOW_UPDATEs
arrive through ``receive_data``; trailers wait behind them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    PingReceived,
    RemoteSettingsChanged,
    RequestReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
)
from h2.events import Event as H2Event
from h2.exceptions import H2Error
from h2.settings import SettingCodes

from reference_impl.errors import CodecError, ErrorCode, carrying
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing.options import FramingOptions

__all__ = ["GrpcClient", "GrpcServer", "client", "server"]

_PREFIX = struct.Struct(">BI")  # Compressed-Flag, Message-Length
_PREFIX_SIZE = _PREFIX.size
_MAX_WIRE_LENGTH = 0xFFFF_FFFF
_WINDOW = 1024 * 1024  # generous for throughput, small enough that big streams exercise blocking
#: gRPC's status for a method the server does not serve
_UNIMPLEMENTED = 12
_FRAME_HEADER_SIZE = 9
_TYPE_OFFSET = 3  # frame header: length (3 bytes), type, flags, stream id (4 bytes)
_FLAGS_OFFSET = 4
_DATA_FRAME = 0x0
_HEADERS_FRAME = 0x1
_PUSH_PROMISE_FRAME = 0x5
_CONTINUATION_FRAME = 0x9
_END_STREAM = 0x1
_END_HEADERS = 0x4
_PADDED = 0x8
_STREAM_ID_MASK = 0x7FFF_FFFF
_OK_TRAILERS = [("grpc-status", "0")]
_FAILED_TRAILERS = [("grpc-status", "13"), ("grpc-message", "producer failed")]  # INTERNAL

_Headers = Iterable[tuple[bytes | str, bytes | str]]


#: SETTINGS and PING frames a client acknowledges on one connection; past them the service is
#: flooding (a gRPC server sends one SETTINGS, and a PING now and then)
MAX_ANSWERED = 1000


class GrpcClient:
    """Consumer side: one server-streaming call, messages out of the response's DATA frames."""

    delimiter = "grpc-5-byte-prefix"

    def __init__(self, options: FramingOptions) -> None:
        self._request = options.request
        self._h2 = H2Connection(H2Configuration(client_side=True))
        self._stream_id = self._h2.get_next_available_stream_id()
        self._reader = _MessageReader(options.max_message_bytes)
        self._watcher = _FrameWatcher(self._stream_id)
        self._ended = False
        self._response_seen = False  # h2 takes DATA only after the response headers
        self._goaway_seen = False  # and never after a GOAWAY: h2 then refuses every frame
        self._answered = 0  # SETTINGS and PING frames h2 acknowledges (``MAX_ANSWERED``)
        self._error: CodecError | None = None

    def initiate(self) -> bytes:
        """Preface, SETTINGS (1 MiB window, no push), window credit, the request, END_STREAM."""
        h2 = self._h2
        h2.initiate_connection()
        h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW, SettingCodes.ENABLE_PUSH: 0})
        h2.increment_flow_control_window(_WINDOW - h2.inbound_flow_control_window)
        request = self._request
        headers = [
            (":method", request.method_for("grpc")),
            (":scheme", "http"),
            (":path", request.path),
            (":authority", request.authority),
            ("content-type", request.header("content-type") or "application/grpc"),
            ("te", "trailers"),
        ]
        # the request's headers as metadata (gRPC's names are lower-case)
        headers += [(k.lower(), v) for k, v in request.headers if k.lower() != "content-type"]
        h2.send_headers(self._stream_id, headers)
        body = _PREFIX.pack(0, len(request.body)) + request.body
        h2.send_data(self._stream_id, body, end_stream=True)
        return h2.data_to_send()

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed received bytes; return the messages (and the end) they complete."""
        self._raise_if_dead()
        if self._ended:
            return []  # nothing after the trailers concerns this call
        events: list[Event] = []
        try:
            with carrying(events):  # once per read: what completed before an error goes with it
                consumed = self._read_frames(data, events)
        except CodecError as exc:
            raise self._die(exc) from None
        if consumed:  # one acknowledgement per read, not per frame
            self._h2.acknowledge_received_data(consumed, self._stream_id)
        return events

    def receive_eof(self) -> list[Event]:
        """The producer closed: clean only after the trailers."""
        self._raise_if_dead()
        if self._ended:
            return []
        raise self._die(self._cut("EOF without trailers", self._watcher.in_data_frame))

    def data_to_send(self) -> bytes:
        """SETTINGS acknowledgements, PING answers and flow-control credit."""
        return self._h2.data_to_send()

    def partial(self) -> bytes:
        """Payload bytes of the message in flight, including those in an incomplete DATA frame.

        Inside the 5-byte prefix this is the prefix bytes received so far, so that a stream
        stopped there never looks like a clean boundary.
        """
        return self._in_flight().partial()

    def expected_size(self) -> int | None:
        """The declared length of the message in flight, once its prefix is complete."""
        return self._in_flight().expected_size()

    def _in_flight(self) -> _MessageReader:
        """The reader as it will be once h2 releases the incomplete DATA frame."""
        pending = self._watcher.pending_data()
        if not pending:
            return self._reader
        probe = self._reader.copy()
        probe.feed(pending)
        return probe

    def _read_frames(self, data: bytes, events: list[Event]) -> int:
        """Append the events ``data`` completes to ``events``; return the flow-controlled bytes
        read.

        h2 raises without the events of the frames before the bad one, so it gets one frame
        per call: an error in any frame then comes after every message before it, and what is
        delivered does not depend on where the reads split the frames.
        """
        consumed = 0
        for piece in self._watcher.split(data, self._h2.max_inbound_frame_size):
            consumed += self._on_h2_events(self._receive_frames(piece), events)
            if self._ended:
                return consumed
        # Fail fast on a bad prefix while h2 still holds back its DATA frame; but only where h2
        # will take that frame, or the payload would decide what h2's refusal decides when the
        # frame arrives in one piece. (Inside a header block the watcher keeps no payload.)
        if self._response_seen and not self._goaway_seen:
            self._reader.check_ahead(self._watcher.pending_data())
        return consumed

    def _receive_frames(self, piece: bytes) -> list[H2Event]:
        """h2's events for ``piece``; its protocol errors as ``CodecError``."""
        try:
            return self._h2.receive_data(piece)
        except H2Error as exc:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, str(exc)) from exc

    def _on_h2_events(self, h2_events: list[H2Event], events: list[Event]) -> int:
        """Append what ``h2_events`` complete to ``events``; return the flow-controlled bytes
        they consumed (the caller acknowledges them)."""
        consumed = 0
        for event in h2_events:
            if isinstance(event, DataReceived):
                consumed += event.flow_controlled_length
                events += self._reader.feed(event.data)
            elif isinstance(event, ResponseReceived):
                headers = _header_map(event.headers)
                _check_response(headers)
                self._response_seen = True
                if event.stream_ended is not None:  # Trailers-Only (catalogue 43)
                    events.append(self._finish(headers))
            elif isinstance(event, TrailersReceived):
                events.append(self._finish(_header_map(event.headers)))
            elif isinstance(event, RemoteSettingsChanged | PingReceived):
                self._count_answer(event)
            elif isinstance(event, StreamEnded):
                raise self._cut("END_STREAM without trailers")
            elif isinstance(event, StreamReset):
                raise CodecError(ErrorCode.REMOTE_ERROR, f"RST_STREAM {_name(event.error_code)}")
            elif isinstance(event, ConnectionTerminated):
                if event.error_code:
                    raise CodecError(ErrorCode.REMOTE_ERROR, f"GOAWAY {_name(event.error_code)}")
                self._goaway_seen = True  # graceful: EOF decides, if h2 refuses nothing first
            if self._ended:
                break
        return consumed

    def _count_answer(self, event: H2Event) -> None:
        """h2 answers every SETTINGS and PING with an ACK: a service that floods them would be
        answered at any volume (a flood of 2 MB of SETTINGS took 362 kB of ACKs upstream)."""
        self._answered += 1
        if self._answered > MAX_ANSWERED:
            kind = "SETTINGS" if isinstance(event, RemoteSettingsChanged) else "PING"
            detail = f"HTTP/2 flood: more than {MAX_ANSWERED} SETTINGS and PING frames (a {kind})"
            raise CodecError(ErrorCode.PROTOCOL_ERROR, detail)

    def _finish(self, trailers: dict[str, str]) -> StreamEnd:
        if self._reader.in_message:
            raise CodecError(ErrorCode.FRAME_TRUNCATED, "trailers arrived inside a message")
        status = trailers.get("grpc-status", "")
        if not (status.isascii() and status.isdigit()):
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"trailers without grpc-status: {status!r}")
        self._ended = True
        return StreamEnd(ok=int(status) == 0, detail=f"grpc-status {int(status)}")

    def _cut(self, detail: str, mid_data_frame: bool = False) -> CodecError:
        """The stream stops here without trailers: inside a message that is truncation."""
        if self._reader.in_message or mid_data_frame:
            return CodecError(ErrorCode.FRAME_TRUNCATED, detail)
        return CodecError(ErrorCode.STREAM_END_MISSING, detail, at_boundary=True)

    def _die(self, error: CodecError) -> CodecError:
        self._error = error
        return error

    def _raise_if_dead(self) -> None:
        if self._error is not None:
            raise self._error


def _check_response(headers: dict[str, str]) -> None:
    status, content_type = headers.get(":status"), headers.get("content-type", "")
    if status is not None and not status.startswith("2"):
        detail = f"the service answered {status} ({content_type or 'no content type'})"
        raise CodecError(ErrorCode.HTTP_STATUS, detail)
    if status != "200" or not content_type.startswith("application/grpc"):
        detail = f"response {status} {content_type!r} is not a gRPC response"
        raise CodecError(ErrorCode.PROTOCOL_ERROR, detail)


class _MessageReader:
    """Splits a stream's DATA bytes into Length-Prefixed-Messages (one copy per message)."""

    def __init__(self, max_size: int, strict: bool = True) -> None:
        self._max = max_size
        self._strict = strict  # a probe only measures: it checks nothing
        # Unconsumed bytes: always a strict prefix of one message (5-byte prefix, then payload).
        self._buffer = bytearray()

    @property
    def in_message(self) -> bool:
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[Event]:
        buffer = self._buffer
        if buffer:
            buffer += data
            source: bytes | bytearray = buffer
        else:
            source = data  # common case: parse the DATA payload itself, skip one copy
        events: list[Event] = []
        with memoryview(source) as view, carrying(events):
            consumed = self._split(view, events)
            if source is data:
                buffer += view[consumed:]
        if source is buffer:
            del buffer[:consumed]
        return events

    def partial(self) -> bytes:
        if len(self._buffer) < _PREFIX_SIZE:
            return bytes(self._buffer)
        return bytes(self._buffer[_PREFIX_SIZE:])

    def expected_size(self) -> int | None:
        if len(self._buffer) < _PREFIX_SIZE:
            return None
        return int(_PREFIX.unpack_from(self._buffer)[1])

    def check_ahead(self, data: bytes) -> None:
        """Raise now the error that feeding ``data`` would raise, without consuming it."""
        try:
            self._scan_ahead(data)
        except CodecError:
            # Rare, and the codec dies of it: replay on a strict twin, which raises the same
            # error carrying the messages that ``data`` completes before the bad prefix, as
            # feeding the whole DATA frame would.
            self.copy(strict=True).feed(data)
            raise

    def _scan_ahead(self, data: bytes) -> None:
        """Check the prefixes that ``data`` would bring, without copying the message in flight."""
        held = len(self._buffer)
        if held < _PREFIX_SIZE:
            tail = bytes(self._buffer) + data
        else:  # skip what is left of the message in flight
            tail = data[_PREFIX_SIZE + int(_PREFIX.unpack_from(self._buffer)[1]) - held :]
        pos = 0
        while pos < len(tail):
            _check_flag(tail[pos])
            if len(tail) - pos < _PREFIX_SIZE:
                return
            pos += _PREFIX_SIZE + self._checked_size(int(_PREFIX.unpack_from(tail, pos)[1]))

    def copy(self, strict: bool = False) -> _MessageReader:
        """A probe: the same state, without the checks unless ``strict`` (they belong to the
        real reader)."""
        twin = _MessageReader(self._max, strict=strict)
        twin._buffer = bytearray(self._buffer)
        return twin

    def _split(self, view: memoryview, events: list[Event]) -> int:
        """Append each whole message in ``view`` to ``events``; return the bytes consumed."""
        pos, end = 0, len(view)
        while pos < end:
            if self._strict:
                _check_flag(view[pos])  # fail on the first byte, before the prefix is complete
            if end - pos < _PREFIX_SIZE:
                break
            size = self._checked_size(int(_PREFIX.unpack_from(view, pos)[1]))
            stop = pos + _PREFIX_SIZE + size
            if stop > end:
                break
            events.append(Message(view[pos + _PREFIX_SIZE : stop].tobytes()))
            pos = stop
        return pos

    def _checked_size(self, size: int) -> int:
        if size > self._max and self._strict:
            raise CodecError(ErrorCode.FRAME_TOO_LARGE, f"declared {size} > {self._max} bytes")
        return size


def _check_flag(flag: int) -> None:
    if flag == 1:
        raise CodecError(ErrorCode.PROTOCOL_ERROR, "compressed message, but none was negotiated")
    if flag != 0:
        raise CodecError(ErrorCode.MALFORMED_FRAME, f"compressed-flag byte {flag:#04x}")


class _FrameWatcher:
    """Follows HTTP/2 frame boundaries in the received bytes, beside h2, which holds a frame
    back until all of it is in. Keeps the payload so far of an incomplete DATA frame on our
    stream, and refuses a frame above the size limit as soon as its header is in (h2 itself
    waits for the whole frame)."""

    def __init__(self, stream_id: int) -> None:
        self._stream_id = stream_id
        self._header = bytearray()  # an incomplete 9-byte frame header
        self._remaining = 0  # payload bytes still to come of the current frame
        self._length = 0
        self._flags = 0
        self._watched = False  # the current frame is DATA on our stream, and h2 will take it
        self._plain = False  # ... and unpadded, without END_STREAM (see split)
        self._header_block = False  # a HEADERS frame without END_HEADERS awaits CONTINUATION
        self._payload = bytearray()  # its payload so far, kept only while it is incomplete
        self._max_frame_size = 0

    @property
    def in_data_frame(self) -> bool:
        """True while a DATA frame with payload is incomplete: a message is on its way.

        Inside a frame header this is known from its 4th byte (the type) on; the stream id
        comes last, but DATA can only be on our stream (the only one open).
        """
        header = self._header
        if len(header) > _TYPE_OFFSET:
            return header[_TYPE_OFFSET] == _DATA_FRAME and any(header[:_TYPE_OFFSET])
        return self._watched and self._remaining > 0

    def split(self, data: bytes, max_frame_size: int) -> Iterator[bytes]:
        """Follow ``data`` and cut it after each frame it completes (the last piece may end
        inside a frame), so that h2 takes one frame per call. The watcher advances as the
        pieces are taken, so a frame header above the limit raises only after the pieces
        before it.

        A run of plain DATA frames (on our stream, unpadded, without END_STREAM) stays in one
        piece, as the hot path needs: between them h2's state does not change, so if it
        refuses one of them it refuses the first (flow control aside, which a producer that
        keeps to its window never breaks), and no message comes before the refusal.
        """
        self._max_frame_size = max_frame_size  # h2's, which SETTINGS may change between reads
        start = pos = 0
        end = len(data)
        while pos < end:
            if self._remaining:
                take = min(self._remaining, end - pos)
                self._remaining -= take
                if not self._remaining:
                    self._payload.clear()
                elif self._watched:
                    self._payload += data[pos : pos + take]
                pos += take
            else:
                take = min(_FRAME_HEADER_SIZE - len(self._header), end - pos)
                self._header += data[pos : pos + take]
                pos += take
                if len(self._header) == _FRAME_HEADER_SIZE:
                    self._start_frame()
            if not self._remaining and not self._header:  # a frame ends here
                if self._plain and self._starts_plain(data, pos):
                    continue
                yield data[start:pos]
                start = pos
        if start < end:
            yield data[start:]

    def pending_data(self) -> bytes:
        """Data bytes (padding removed) received so far of the incomplete DATA frame."""
        if not self.in_data_frame:
            return b""
        payload = bytes(self._payload)
        if not self._flags & _PADDED:
            return payload
        # A padded frame: pad-length byte, data, padding (RFC 9113 section 6.1).
        if not payload:
            return b""
        data_length = max(self._length - 1 - payload[0], 0)
        return payload[1 : 1 + data_length]

    def _start_frame(self) -> None:
        header = self._header
        length = int.from_bytes(header[:3], "big")
        if length > self._max_frame_size:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"HTTP/2 frame of {length} bytes")
        stream_id = int.from_bytes(header[5:9], "big") & _STREAM_ID_MASK
        kind, flags = header[_TYPE_OFFSET], header[_FLAGS_OFFSET]
        # Inside a header block h2 refuses any frame but CONTINUATION: such DATA is no message.
        self._watched = (
            kind == _DATA_FRAME and stream_id == self._stream_id and not self._header_block
        )
        self._plain = self._watched and not flags & (_PADDED | _END_STREAM)
        if kind in (_HEADERS_FRAME, _PUSH_PROMISE_FRAME, _CONTINUATION_FRAME):
            self._header_block = not flags & _END_HEADERS
        self._length = self._remaining = length
        self._flags = flags
        header.clear()

    def _starts_plain(self, data: bytes, pos: int) -> bool:
        """Does a whole header at ``data[pos:]`` start a plain DATA frame (see ``split``), one
        that ``_start_frame`` will not refuse?"""
        if len(data) - pos < _FRAME_HEADER_SIZE:
            return False
        return (
            data[pos + _TYPE_OFFSET] == _DATA_FRAME
            and not data[pos + _FLAGS_OFFSET] & (_PADDED | _END_STREAM)
            and int.from_bytes(data[pos + 5 : pos + 9], "big") & _STREAM_ID_MASK == self._stream_id
            and int.from_bytes(data[pos : pos + 3], "big") <= self._max_frame_size
        )


class GrpcServer:
    """Producer side: answers one call, streams length-prefixed messages, ends with trailers.

    Like the other producers it does not enforce ``max_message_bytes``: that limit is the
    consumer's, and a scenario may send a message above it on purpose.
    """

    def __init__(self, options: FramingOptions) -> None:
        self._h2 = H2Connection(H2Configuration(client_side=False))
        self._h2.initiate_connection()
        self._stream_id: int | None = None
        self._headers: dict[str, str] = {}
        self._queue = bytearray()  # framed bytes waiting for flow-control credit
        self._trailers: list[tuple[str, str]] | None = None  # set by end(), sent after the queue
        self._ending = False
        self._route = options.route
        #: grpc-status 12 when the call names a method this server does not serve
        self.refused: int | None = None

    def receive_data(self, data: bytes) -> None:
        """Feed the request and the client's acknowledgements and window credit."""
        try:
            events = self._h2.receive_data(data)
        except H2Error as exc:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, str(exc)) from exc
        for event in events:
            if isinstance(event, RequestReceived):
                self._on_request(event.stream_id, _header_map(event.headers))
            elif isinstance(event, DataReceived):  # the request message: read and dropped
                self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamReset) and event.stream_id == self._stream_id:
                raise CodecError(ErrorCode.REMOTE_ERROR, "the client reset the call")
        self._flush()

    @property
    def ready(self) -> bool:
        """True once the request headers have arrived (and been answered, or refused)."""
        return self._stream_id is not None

    @property
    def blocked(self) -> bool:
        """True while framed bytes wait for the consumer's WINDOW_UPDATE."""
        return bool(self._queue)

    def send_message(self, message: Message) -> None:
        """Frame one message; what the window does not take waits in the queue."""
        self._check_open()
        size = len(message.data)
        if size > _MAX_WIRE_LENGTH:
            raise ValueError(f"message of {size} bytes does not fit a gRPC length prefix")
        self._queue += _PREFIX.pack(0, size)
        self._queue += message.data
        self._flush()

    def end(self, ok: bool = True) -> None:
        """Trailers ``grpc-status: 0``, or ``13`` (INTERNAL) with a message; END_STREAM."""
        self._check_open()
        self._ending = True
        self._trailers = _OK_TRAILERS if ok else _FAILED_TRAILERS
        self._flush()

    def data_to_send(self) -> bytes:
        """Frames ready for the wire, as much as the flow-control window allows."""
        return self._h2.data_to_send()

    def request_header(self, name: str) -> str | None:
        """A request header (pseudo-headers such as ``:path`` included), any case."""
        return self._headers.get(name.lower())

    def _on_request(self, stream_id: int, headers: dict[str, str]) -> None:
        if self._stream_id is not None:  # one call per connection
            self._h2.reset_stream(stream_id, ErrorCodes.REFUSED_STREAM)
            return
        self._stream_id, self._headers = stream_id, headers
        path = headers.get(":path", "").split("?")[0]
        # an unknown method: Trailers-Only, as a gRPC server answers one
        if self._route is not None and path != self._route.path:
            self.refused, self._ending = _UNIMPLEMENTED, True
            message = f"unknown method {path} (served: {self._route.path})"
            answer = [(":status", "200"), ("content-type", "application/grpc")]
            answer += [("grpc-status", str(_UNIMPLEMENTED)), ("grpc-message", message)]
            self._h2.send_headers(stream_id, answer, end_stream=True)
            return
        self._h2.send_headers(stream_id, [(":status", "200"), ("content-type", "application/grpc")])

    def _flush(self) -> None:
        """Move queued bytes into DATA frames while the window allows, then the trailers."""
        stream_id, h2, queue = self._stream_id, self._h2, self._queue
        if stream_id is None:
            return
        while queue:
            window = h2.local_flow_control_window(stream_id)
            size = min(len(queue), window, h2.max_outbound_frame_size)
            if size <= 0:
                break
            h2.send_data(stream_id, bytes(queue[:size]))
            del queue[:size]
        if self._trailers is not None and not queue:
            h2.send_headers(stream_id, self._trailers, end_stream=True)
            self._trailers = None

    def _check_open(self) -> None:
        if self._stream_id is None or self._ending:
            raise RuntimeError("no call to answer yet, or the call already ended")


def _header_map(headers: _Headers | None) -> dict[str, str]:
    """Headers as a dict of lower-case names to values (h2 gives bytes without an encoding)."""
    return {_text(name).lower(): _text(value) for name, value in headers or ()}


def _name(code: ErrorCodes | int | None) -> str:
    """An HTTP/2 error code by name; h2 leaves codes it does not know as plain ints."""
    return code.name if isinstance(code, ErrorCodes) else str(code)


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def client(options: FramingOptions) -> GrpcClient:
    """A fresh consumer-side codec."""
    return GrpcClient(options)


def server(options: FramingOptions) -> GrpcServer:
    """A fresh producer-side codec."""
    return GrpcServer(options)
