"""WebSocket framing (RFC 6455) on wsproto: one application message per WebSocket message.

Client. wsproto's ``H11Handshake`` writes the upgrade request and checks the 101 answer. Frames
are then read with wsproto's ``FrameDecoder``, the parser behind wsproto's own ``Connection``,
which enforces the frame rules: masking direction, opcodes, reserved bits, control frames
(at most 125 bytes, never fragmented), minimal length encodings. We drive the decoder directly
instead of ``Connection`` because ``Connection`` hides the frame header, and the header is what
gives ``expected_size()``, a ``FRAME_TOO_LARGE`` before the payload arrives, and whether EOF fell
inside a frame. Reassembly is ours: wsproto hands out pieces of frames as they arrive (failure
catalogue, case 44); a ``Message`` is produced only when the final fragment is complete, so
``partial()`` is exact: every payload byte received of the message in flight, unmasked.

Text is checked as UTF-8 piece by piece, so an invalid sequence fails as soon as its bad byte
arrives, not when the message ends (case 47); a character cut by a fragment boundary is legal.

Ends (cases 48-50). A close frame at a message boundary is the explicit end:
``StreamEnd(ok=code == 1000, detail="close <code>")`` (``"close 1005"`` for a close without a
code), and the client answers it. A close frame between the fragments of a message is
``FRAME_TRUNCATED``: the producer stopped inside a message, and a close does not make the
partial message whole, so it is treated exactly like EOF at that point. EOF without a close is
``FRAME_TRUNCATED`` inside a message (inside a frame, between fragments, or inside the header
of a data frame) and ``STREAM_END_MISSING`` at a boundary (also before the handshake ends).
Bytes after the close are ignored (RFC 6455 section 5.5.1).

Server. wsproto answers the handshake and reads the client's frames (pong, close answer); data
frames are written here, because wsproto only sends text as ``str``, and splitting a message
into ``ws_fragment_bytes`` fragments may cut inside a UTF-8 character. Nothing is compressed.
"""

from __future__ import annotations

import codecs
import re
import struct
from codecs import IncrementalDecoder
from typing import cast

from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.frame_protocol import (
    LOCAL_ONLY_CLOSE_REASONS,
    CloseReason,
    Frame,
    FrameDecoder,
    Header,
    Opcode,
    ParseFailed,
)
from wsproto.handshake import H11Handshake
from wsproto.utilities import ProtocolError

from reference_impl.errors import CodecError, ErrorCode, carrying
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing.options import FramingOptions
from reference_impl.framing.request import refusal

__all__ = ["WebSocketClient", "WebSocketServer", "client", "server"]

# The handshake answer ends at its first blank line (the same rule as h11's reader).
_END_OF_HEAD = re.compile(rb"\n\r?\n")
_MAX_HEAD = 16 * 1024
_CONTROL_BIT = 0x08
# Close codes a peer may put on the wire (RFC 6455 section 7.4; catalogue, case 50).
_WIRE_CLOSE_CODES = frozenset(CloseReason) - frozenset(LOCAL_ONLY_CLOSE_REASONS)
_PRIVATE_CLOSE_CODES = range(3000, 5000)


class WebSocketClient:
    """Consumer side: upgrades the connection, then reassembles whole messages."""

    delimiter = "websocket-frame-fin"

    def __init__(self, options: FramingOptions, *, monitor: bool = False) -> None:
        self._request = options.request
        self._text = options.ws_text
        #: watch another client's connection: its handshake answer was made for that client's
        #: key, not ours, so only its status is checked (``monitor``)
        self._monitor = monitor
        self._handshake = H11Handshake(ConnectionType.CLIENT)
        self._head = bytearray()  # the handshake answer, until its blank line
        self._frames: FrameDecoder | None = None  # set once the server accepted the upgrade
        self._writer: Connection | None = None  # wsproto writes our (masked) pongs and close
        self._message = _MessageInFlight(options.max_message_bytes)
        self._out = bytearray()
        self._closed = False
        self._error: CodecError | None = None

    def initiate(self) -> bytes:
        """The HTTP/1.1 upgrade request for the link's request: its path, its headers (a
        ``Sec-WebSocket-Protocol`` header as the subprotocols offered)."""
        request = self._request
        offered = request.header("sec-websocket-protocol") or ""
        extra = [
            (name.encode(), value.encode("utf-8"))
            for name, value in request.headers
            if name.lower() != "sec-websocket-protocol"
        ]
        upgrade = Request(
            host=request.authority,
            target=request.path,
            subprotocols=[p.strip() for p in offered.split(",") if p.strip()],
            extra_headers=extra,
        )
        return self._handshake.send(upgrade)

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed received bytes; return the whole messages (and the close) they complete."""
        self._raise_if_dead()
        if self._closed:
            return []
        try:
            if self._frames is None:
                data = self._read_head(data)
            if self._frames is None:
                return []
            self._frames.receive_bytes(data)
            return self._read_frames(self._frames)
        except CodecError as exc:
            raise self._die(exc) from None

    def receive_eof(self) -> list[Event]:
        """The producer closed: clean only after a close frame."""
        self._raise_if_dead()
        if self._closed:
            return []
        if self._message.active or self._data_header_pending():
            raise self._die(CodecError(ErrorCode.FRAME_TRUNCATED, "EOF inside a message"))
        detail = "EOF without a close frame"
        raise self._die(CodecError(ErrorCode.STREAM_END_MISSING, detail, at_boundary=True))

    def data_to_send(self) -> bytes:
        """Pongs and the answer to the server's close, masked as a client must."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def partial(self) -> bytes:
        """Payload bytes received of the message in flight (all its fragments so far)."""
        return self._message.partial()

    def expected_size(self) -> int | None:
        """The header's payload length while the message in flight is one unfragmented frame."""
        return self._message.expected_size()

    def _read_head(self, data: bytes) -> bytes:
        """Collect the handshake answer; once whole, check it and return the bytes after it."""
        self._head += data
        end = _END_OF_HEAD.search(self._head)
        if end is None:
            if len(self._head) > _MAX_HEAD:
                raise CodecError(ErrorCode.PROTOCOL_ERROR, "handshake answer too long")
            return b""
        head, rest = bytes(self._head[: end.end()]), bytes(self._head[end.end() :])
        self._head.clear()
        if problem := _bad_status_line(head):
            raise CodecError(ErrorCode.PROTOCOL_ERROR, problem)
        if self._monitor:
            return self._watch_head(head, rest)
        try:
            self._handshake.receive_data(head)
        except ProtocolError as exc:  # the handshake answer was refused by wsproto
            raise CodecError(ErrorCode.PROTOCOL_ERROR, str(exc)) from exc
        except UnicodeDecodeError as exc:  # wsproto reads Connection, extensions as ASCII
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"handshake header: {exc}") from exc
        for event in self._handshake.events():
            if isinstance(event, AcceptConnection):
                self._writer = self._handshake.connection
                self._frames = FrameDecoder(client=True)
                self._send_body()
                return rest
            if isinstance(event, RejectConnection):
                raise CodecError(ErrorCode.HTTP_STATUS, _refused(event.status_code, head, rest))
        raise CodecError(ErrorCode.PROTOCOL_ERROR, "the server refused the WebSocket upgrade")

    def _send_body(self) -> None:
        """The request's body, if any, as the first message (agents' WebSocket APIs take the
        request after the upgrade)."""
        body, writer = self._request.body, self._writer
        if body and writer is not None:
            first = TextMessage(body.decode("utf-8")) if self._text else BytesMessage(body)
            self._out += writer.send(first)

    def _watch_head(self, head: bytes, rest: bytes) -> bytes:
        """A monitor's view of the handshake answer: a 101 switches to frames."""
        status = head.split(b"\r\n", 1)[0].split(b" ")
        if len(status) >= 2 and status[1].isdigit() and not status[1].startswith(b"1"):
            raise CodecError(ErrorCode.HTTP_STATUS, _refused(int(status[1]), head, rest))
        if len(status) < 2 or status[1] != b"101":
            raise CodecError(ErrorCode.PROTOCOL_ERROR, "the server refused the WebSocket upgrade")
        self._writer = Connection(ConnectionType.CLIENT)  # its pongs are not sent: not ours
        self._frames = FrameDecoder(client=True)
        return rest

    def _read_frames(self, frames: FrameDecoder) -> list[Event]:
        events: list[Event] = []
        with carrying(events):  # once per read, not per frame
            while not self._closed:
                frame = _next_frame(frames)
                if frame is None:
                    self._note_header(frames.header)
                    break
                event = self._on_frame(frame, frames.header)
                if event is not None:
                    events.append(event)
        return events

    def _note_header(self, header: Header | None) -> None:
        """A data frame header whose payload has not arrived yet still starts the frame."""
        if header is not None and not header.opcode.iscontrol() and not self._message.in_frame:
            self._message.begin_frame(header.opcode, header.fin, header.payload_len)

    def _on_frame(self, frame: Frame, header: Header | None) -> Event | None:
        # Without extensions, FrameDecoder hands out payloads as bytes.
        payload = cast(bytes, frame.payload)
        if frame.opcode.iscontrol():
            return self._on_control(frame.opcode, payload)
        if not self._message.in_frame:
            # The first piece of a frame. If the frame is already complete, the decoder has
            # dropped its header, and this piece is the whole payload.
            length = header.payload_len if header is not None else len(payload)
            self._message.begin_frame(frame.opcode, frame.message_finished, length)
        data = self._message.add(payload, frame.frame_finished)
        return None if data is None else Message(data)

    def _on_control(self, opcode: Opcode, payload: bytes) -> Event | None:
        assert self._writer is not None
        if opcode is Opcode.PING:
            self._out += self._writer.send(Pong(payload=payload))
        elif opcode is Opcode.CLOSE:
            code = _close_code(payload)
            if self._message.active:  # catalogue 48: see the module docstring
                detail = f"close {code} between the fragments of a message"
                raise CodecError(ErrorCode.FRAME_TRUNCATED, detail)
            self._out += self._writer.send(CloseConnection(code=code))
            self._closed = True
            return StreamEnd(ok=code == CloseReason.NORMAL_CLOSURE, detail=f"close {code}")
        return None  # an unsolicited pong needs no answer (RFC 6455 section 5.5.3)

    def _data_header_pending(self) -> bool:
        """True when the decoder holds the first bytes of a data frame's header."""
        frames = self._frames
        if frames is None or frames.header is not None or not len(frames.buffer):
            return False
        return not frames.buffer.buffer[0] & _CONTROL_BIT

    def _die(self, error: CodecError) -> CodecError:
        self._error = error
        return error

    def _raise_if_dead(self) -> None:
        if self._error is not None:
            raise self._error


def _next_frame(frames: FrameDecoder) -> Frame | None:
    """The next frame (or piece of one); a broken frame rule as ``CodecError``, raised where the
    events of the frames before it can still go with it."""
    try:
        return frames.process_buffer()
    except ParseFailed as exc:  # a frame rule, checked by wsproto's FrameDecoder
        raise CodecError(ErrorCode.PROTOCOL_ERROR, str(exc)) from exc


class _MessageInFlight:
    """The data message being received: its payload so far, its UTF-8 state, its size limit."""

    def __init__(self, max_size: int) -> None:
        self._max = max_size
        self.active = False  # a frame of this message has begun
        self.in_frame = False  # inside a frame whose payload is not complete yet
        self._fin = False  # the current frame is the message's last
        self._declared: int | None = None  # payload length while the message is one frame
        self._parts = bytearray()
        self._utf8: IncrementalDecoder | None = None

    def begin_frame(self, opcode: Opcode, fin: bool, length: int) -> None:
        """Check a new frame's place in the message and its declared size, before its payload."""
        if opcode is Opcode.CONTINUATION:
            if not self.active:
                raise CodecError(ErrorCode.PROTOCOL_ERROR, "continuation with nothing to continue")
            self._declared = None
        else:
            if self.active:
                raise CodecError(ErrorCode.PROTOCOL_ERROR, f"{opcode.name} frame inside a message")
            self.active = True
            self._declared = length if fin else None
            self._utf8 = codecs.getincrementaldecoder("utf-8")() if opcode is Opcode.TEXT else None
        size = len(self._parts) + length  # the header declares it: check before any payload
        if size > self._max:
            raise CodecError(ErrorCode.FRAME_TOO_LARGE, f"message of {size} > {self._max} bytes")
        self.in_frame, self._fin = True, fin

    def add(self, payload: bytes, frame_finished: bool) -> bytes | None:
        """Append a piece of the current frame; return the message once its last frame ends."""
        last = frame_finished and self._fin
        if self._utf8 is not None:
            _check_utf8(self._utf8, payload, last)
        self.in_frame = not frame_finished
        if not self._parts and last:
            message = payload  # one frame in one piece: no reassembly copy
        else:
            self._parts += payload
            if not last:
                return None
            message = bytes(self._parts)
        self._parts.clear()
        self.active, self._declared, self._utf8 = False, None, None
        return message

    def partial(self) -> bytes:
        return bytes(self._parts)

    def expected_size(self) -> int | None:
        return self._declared


def _check_utf8(decoder: IncrementalDecoder, data: bytes, final: bool) -> None:
    try:
        decoder.decode(data, final)
    except UnicodeDecodeError as exc:
        raise CodecError(ErrorCode.INVALID_UTF8, str(exc)) from exc
    pending: bytes = decoder.getstate()[0]
    # CPython's decoder holds back ED A0..BF (a UTF-16 surrogate) until its third byte arrives,
    # although no third byte can make it valid. Fail now, not one byte late (catalogue 47).
    if len(pending) >= 2 and pending[0] == 0xED and pending[1] >= 0xA0:
        raise CodecError(ErrorCode.INVALID_UTF8, "UTF-16 surrogate encoded in UTF-8")


def _close_code(payload: bytes) -> int:
    """The code of a received close frame, checked as RFC 6455 section 7 asks."""
    if not payload:
        return int(CloseReason.NO_STATUS_RCVD)
    if len(payload) == 1:
        raise CodecError(ErrorCode.PROTOCOL_ERROR, "close frame with a 1-byte payload")
    code = int.from_bytes(payload[:2], "big")
    if code not in _WIRE_CLOSE_CODES and code not in _PRIVATE_CLOSE_CODES:
        raise CodecError(ErrorCode.PROTOCOL_ERROR, f"close code {code} is not allowed on the wire")
    try:
        payload[2:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(ErrorCode.INVALID_UTF8, "close reason is not UTF-8") from exc
    return code


class WebSocketServer:
    """Producer side: accepts the upgrade, then sends each message as one or more frames.

    Message bytes go out as given, also under the text opcode: checking UTF-8 is the consumer's
    job, and a scenario may send invalid text on purpose.
    """

    def __init__(self, options: FramingOptions) -> None:
        self._opcode = Opcode.TEXT if options.ws_text else Opcode.BINARY
        self._fragment = options.ws_fragment_bytes
        self._handshake = H11Handshake(ConnectionType.SERVER)
        self._ws: Connection | None = None  # after the upgrade
        self._headers: dict[str, str] = {}
        self._out = bytearray()
        self._route = options.route
        self.refused: int | None = None

    def receive_data(self, data: bytes) -> None:
        """Feed the upgrade request, then the client's frames (pings, its close answer)."""
        try:
            if self._ws is None:
                self._read_request(data)
            elif self._ws.state is not ConnectionState.CLOSED:
                self._read_frames(self._ws, data)
        except ProtocolError as exc:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, str(exc)) from exc

    @property
    def ready(self) -> bool:
        """True once the upgrade is accepted (or refused)."""
        return self._ws is not None or self.refused is not None

    @property
    def blocked(self) -> bool:
        """Never: WebSocket has no flow control above TCP."""
        return False

    def send_message(self, message: Message) -> None:
        """Frame one message, in fragments of ``ws_fragment_bytes`` when that is set."""
        self._check_open()
        data, size = message.data, self._fragment
        pieces = [data[i : i + size] for i in range(0, len(data), size)] if size > 0 else []
        pieces = pieces or [data]
        for index, piece in enumerate(pieces):
            opcode = self._opcode if index == 0 else Opcode.CONTINUATION
            self._out += _frame_header(index == len(pieces) - 1, opcode, len(piece))
            self._out += piece

    def end(self, ok: bool = True) -> None:
        """Send the close frame: 1000 when ``ok``, else 1011 (internal error)."""
        ws = self._check_open()
        code = CloseReason.NORMAL_CLOSURE if ok else CloseReason.INTERNAL_ERROR
        self._out += ws.send(CloseConnection(code=code))

    def data_to_send(self) -> bytes:
        """The 101 answer and frames not yet handed out."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def request_header(self, name: str) -> str | None:
        """A header of the upgrade request, by name in any case; None if absent."""
        return self._headers.get(name.lower())

    def _read_request(self, data: bytes) -> None:
        if self.refused is not None:
            return
        self._handshake.receive_data(data)
        for event in self._handshake.events():
            if isinstance(event, Request):
                self._remember_headers(event)
                refused = None
                if self._route is not None:
                    refused = refusal(self._route, "GET", event.target, None, b"")
                if refused is not None:
                    self.refused = refused.status
                    reject = RejectConnection(
                        status_code=refused.status,
                        headers=[(b"content-type", b"application/json")],
                        has_body=True,
                    )
                    self._out += self._handshake.send(reject)
                    self._out += self._handshake.send(RejectData(refused.body))
                    return
                self._out += self._handshake.send(AcceptConnection())
                self._ws = self._handshake.connection

    def _remember_headers(self, request: Request) -> None:
        # wsproto hands these headers over as fields, not in extra_headers.
        headers = {"host": request.host}
        if request.subprotocols:
            headers["sec-websocket-protocol"] = ", ".join(request.subprotocols)
        if request.extensions:
            headers["sec-websocket-extensions"] = ", ".join(map(str, request.extensions))
        for key, value in request.extra_headers:
            headers[key.decode("latin-1").lower()] = value.decode("latin-1")
        self._headers = headers

    def _read_frames(self, ws: Connection, data: bytes) -> None:
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, Ping):
                self._out += ws.send(event.response())
            elif isinstance(event, CloseConnection):
                if ws.state is ConnectionState.REMOTE_CLOSING:
                    self._out += ws.send(event.response())
                elif ws.state is not ConnectionState.CLOSED:
                    # wsproto reports a frame it cannot parse as a close it did not act on.
                    raise CodecError(ErrorCode.PROTOCOL_ERROR, f"bad client frame: {event.reason}")

    def _check_open(self) -> Connection:
        if self._ws is None or self._ws.state is not ConnectionState.OPEN:
            raise RuntimeError("the WebSocket is not open (no upgrade yet, or already closed)")
        return self._ws


def _refused(status: int, head: bytes, rest: bytes) -> str:
    """What a refused upgrade said: its status line, and the start of its body."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    reason = line.split(" ", 2)[2] if line.count(" ") >= 2 else ""
    shown = rest[:200].decode("utf-8", "replace")
    return f"the service answered {status} {reason}".strip() + (f": {shown!r}" if shown else "")


def _frame_header(fin: bool, opcode: Opcode, length: int) -> bytes:
    """An unmasked frame header (servers never mask, RFC 6455 section 5.1)."""
    first = (0x80 if fin else 0) | opcode
    if length < 126:
        return bytes((first, length))
    if length < 1 << 16:
        return struct.pack("!BBH", first, 126, length)
    return struct.pack("!BBQ", first, 127, length)


def monitor(options: FramingOptions) -> WebSocketClient:
    """A consumer-side codec that watches a connection another client opened."""
    return WebSocketClient(options, monitor=True)


def client(options: FramingOptions) -> WebSocketClient:
    """A fresh consumer-side codec."""
    return WebSocketClient(options)


def server(options: FramingOptions) -> WebSocketServer:
    """A fresh producer-side codec."""
    return WebSocketServer(options)


_STATUS_LINE = re.compile(rb"HTTP/1\.[01] \d{3}( [^\r\n]*)?\r?\n")


def _bad_status_line(head: bytes) -> str:
    """What is wrong with the answer's first line when it is no HTTP/1.1 status line (a
    service that does not speak HTTP there); '' when it is one."""
    if _STATUS_LINE.match(head):
        return ""
    line = head.split(b"\n", 1)[0].rstrip(b"\r")[:80]
    return f"bad status line: the answer to the upgrade starts {line!r}, not 'HTTP/1.1 101'"
