"""SSE framing: a ``text/event-stream`` response body over HTTP/1.1, with h11 doing the HTTP.

The client sends the link's request (``request.py``: ``GET`` by default, ``POST`` with a body,
as agent APIs are called; ``Accept: text/event-stream`` unless the request names one;
``Last-Event-ID`` when resuming) and accepts only ``200`` with a ``text/event-stream`` content
type; anything else fails the connection, as the WHATWG EventSource does (catalogue case 35): an
answer that is not 2xx with ``HTTP_STATUS``, quoting the status and the start of its body,
anything else with ``PROTOCOL_ERROR``. The body goes to ``EventStreamParser``
(``sse_parser.py``), which knows the event-stream rules.

How the stream may end depends on the body framing the server chose:

- Chunked (``options.sse_body == "chunked"``): the last chunk ``0\\r\\n\\r\\n`` is the explicit
  end and yields ``StreamEnd(ok=True)``. EOF before it is ``FRAME_TRUNCATED`` when an event is in
  progress and ``STREAM_END_MISSING`` (``at_boundary=True``) when not (case 15). Only the event
  parser's state decides: a cut inside an HTTP chunk header or inside a chunk's trailing CRLF,
  right after a blank line, leaves no message in flight, so it is ``STREAM_END_MISSING``. A
  ``Content-Length`` body ends the same way (the length is an explicit end, too).
- Close-delimited (``"close"``: ``Connection: close``, no length, no chunking): EOF is the only
  end, so at a boundary ``receive_eof`` returns ``[]`` and no ``StreamEnd``; inside an event it is
  ``FRAME_TRUNCATED`` (cases 1, 2, 16). h11 reports such an EOF as a clean ``EndOfMessage``;
  termination is not completion, so the parser's state is checked first.
- An explicit end (last chunk) arriving while an event is in progress is ``FRAME_TRUNCATED``:
  the incomplete event is discarded, never dispatched (case 1).
- EOF before the response head is complete is ``STREAM_END_MISSING``: no message was in flight,
  and the stream never reached an end it could prove.

The server reads the whole request (head and body, the body bounded) and answers it when the
link's route serves it (``FramingOptions.served``); one it does not serve is refused as agent
APIs refuse (404, 405, 415, 400, with a JSON error body), and nothing is streamed. h11 always
chooses chunked
encoding for an HTTP/1.1 peer when no length is given, so the close-delimited head is written
here by hand (the body is then the bare event bytes). No ``Date`` header: the wire stays
deterministic. ``end(ok=False)`` writes nothing, not even the last chunk: HTTP/1.1 has no
failure status after the head, and a chunked body without its terminator is how a server says
"this response failed" (the consumer sees ``STREAM_END_MISSING`` or ``FRAME_TRUNCATED``).
"""

from __future__ import annotations

import h11

from reference_impl.errors import CodecError, ErrorCode, carrying
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing.http1 import ErrorAnswer, Received, RequestReader, refusal_bytes
from reference_impl.framing.http1 import request_bytes as http_request
from reference_impl.framing.options import FramingOptions
from reference_impl.framing.request import Refusal
from reference_impl.framing.sse_parser import EventStreamParser

__all__ = ["HEARTBEAT", "SseClient", "SseServer", "client", "server"]

#: The comment a producer sends to keep an idle stream alive (catalogue case 19).
HEARTBEAT = b": ping\n\n"
_MEDIA_TYPE = b"text/event-stream"
_CLOSE_DELIMITED_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Connection: close\r\n"
    b"\r\n"
)


#: the largest HTTP chunk an SSE response may announce (its events are checked as they come;
#: a size past this is no stream's: ``ffffffffffffffff``)
MAX_CHUNK_BYTES = 1 << 32


class SseClient:
    """Consumer side: sends the GET, checks the response head, parses the event stream."""

    delimiter = "blank-line"

    def __init__(self, options: FramingOptions) -> None:
        self._options = options
        self._conn = h11.Connection(h11.CLIENT)
        self._parser = EventStreamParser(options.max_message_bytes)
        self._head_seen = False  # a 200 text/event-stream response head arrived
        self._refused: ErrorAnswer | None = None  # an answer that is not 2xx, being read
        self._ended = False  # h11 reported the body's end (explicitly, or by EOF)
        self._eof = False
        self._error: CodecError | None = None

    @property
    def last_event_id(self) -> str:
        """The id to resume from (``Last-Event-ID``): the one in force at the last blank line."""
        return self._parser.last_event_id

    @property
    def retry_ms(self) -> int | None:
        """The last valid ``retry`` field in milliseconds; None if the server sent none."""
        return self._parser.retry_ms

    def initiate(self) -> bytes:
        """The link's request, with ``Last-Event-ID`` when ``options.resume_id`` is set."""
        extra: tuple[tuple[str, str], ...] = ()
        resume_id = self._options.resume_id
        if resume_id:
            if any(c in resume_id for c in "\r\n\0"):
                raise ValueError("resume_id must not contain CR, LF or NUL")
            extra = (("Last-Event-ID", resume_id),)
        request = self._options.request
        method = request.method_for("sse")
        return http_request(self._conn, request, method, "text/event-stream", extra)

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from the producer; return the messages (and ``StreamEnd``) they complete."""
        self._raise_if_dead()
        try:
            return self._receive(data)
        except CodecError as err:
            self._error = err
            raise

    def receive_eof(self) -> list[Event]:
        """The producer closed. ``[]`` at a clean end; else ``CodecError`` (module docstring)."""
        self._raise_if_dead()
        try:
            return self._receive_eof()
        except CodecError as err:
            self._error = err
            raise

    def data_to_send(self) -> bytes:
        """Nothing: after the request, the consumer only listens."""
        return b""

    def partial(self) -> bytes:
        """Raw bytes of the event in flight since the last blank line; ``b""`` at a boundary."""
        return self._parser.partial()

    def expected_size(self) -> int | None:
        """Always None: an event does not announce its size."""
        return None

    def _receive(self, data: bytes) -> list[Event]:
        if not data:  # h11 would take b"" for EOF
            return []
        if self._ended or self._eof:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, "bytes after the end of the response")
        self._conn.receive_data(data)
        return self._drain()

    def _receive_eof(self) -> list[Event]:
        if self._ended or self._eof:
            return []
        self._eof = True
        if self._refused is not None:  # the error answer's body ended (or was cut): say what
            raise self._refused.error()  # the service said
        if not self._head_seen:
            raise CodecError(
                ErrorCode.STREAM_END_MISSING, "EOF before the response head", at_boundary=True
            )
        self._conn.receive_data(b"")
        # Only a close-delimited body ends here (h11 turns the EOF into EndOfMessage).
        return self._drain(at_eof=True)

    def _drain(self, at_eof: bool = False) -> list[Event]:
        """Pull h11 events until it needs more bytes."""
        events: list[Event] = []
        # Around the whole loop, h11's errors included: an error after the events of earlier
        # chunks of the same read carries them, as a read that ended before it would deliver.
        with carrying(events):
            while True:
                event = self._next_event(at_eof)
                self._check_chunk()
                if isinstance(event, h11.Response):
                    self._check_head(event)
                elif isinstance(event, h11.Data) and self._refused is not None:
                    self._refused.feed(bytes(event.data))
                elif isinstance(event, h11.Data):
                    events += self._parser.feed(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage) and self._refused is not None:
                    raise self._refused.error()
                elif isinstance(event, h11.EndOfMessage):
                    events += self._end_of_body()
                elif (
                    event is h11.NEED_DATA
                    or event is h11.PAUSED
                    or isinstance(event, h11.ConnectionClosed)
                ):
                    return events
                # InformationalResponse (1xx) is legal before the real response: skip it.

    def _next_event(self, at_eof: bool) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """h11's next event; its protocol errors as ``CodecError`` (at EOF: a cut body)."""
        try:
            return self._conn.next_event()
        except h11.RemoteProtocolError as exc:
            if at_eof:
                raise self._cut("EOF before the last chunk") from None
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"HTTP: {exc}") from None

    def _check_chunk(self) -> None:
        """Refuse a chunk size no stream has (``ffffffffffffffff``): h11 takes any, and would
        read the rest of the stream as one chunk. h11 keeps what is left of the chunk in
        flight in its reader (0.16: ``_bytes_in_chunk``); an h11 without it checks nothing."""
        left = getattr(getattr(self._conn, "_reader", None), "_bytes_in_chunk", 0)
        if isinstance(left, int) and left > MAX_CHUNK_BYTES:
            detail = f"HTTP: a chunk of more than {MAX_CHUNK_BYTES} bytes announced"
            raise CodecError(ErrorCode.PROTOCOL_ERROR, detail)

    def _check_head(self, response: h11.Response) -> None:
        if not 200 <= response.status_code < 300:
            self._refused = ErrorAnswer(response)  # its body says why: read some of it first
            return
        if response.status_code != 200:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"status {response.status_code}, not 200")
        types = [value for name, value in response.headers if name == b"content-type"]
        # Compare the MIME essence: parameters (charset) are ignored, "text/event-streams" is not
        # a match even though it starts with the right prefix.
        if len(types) != 1 or types[0].split(b";", 1)[0].strip().lower() != _MEDIA_TYPE:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"content type {types!r}")
        self._head_seen = True

    def _end_of_body(self) -> list[Event]:
        self._ended = True
        if self._parser.in_progress:
            raise CodecError(ErrorCode.FRAME_TRUNCATED, "body ended inside an event")
        if self._eof:  # close-delimited: EOF is the only end there is, and proves nothing
            return []
        end: list[Event] = [StreamEnd(ok=True)]
        trailing, _ = self._conn.trailing_data
        if trailing:
            # The end did arrive, and goes with the error, as when the junk comes a read later.
            with carrying(end):
                raise CodecError(ErrorCode.PROTOCOL_ERROR, "bytes after the end of the response")
        return end

    def _cut(self, detail: str) -> CodecError:
        if self._parser.in_progress:
            return CodecError(ErrorCode.FRAME_TRUNCATED, detail)
        return CodecError(ErrorCode.STREAM_END_MISSING, detail, at_boundary=True)

    def _raise_if_dead(self) -> None:
        if self._error is not None:
            raise self._error


class SseServer:
    """Producer side: answers the GET with a 200 event stream, then frames one event per message."""

    def __init__(self, options: FramingOptions) -> None:
        if options.sse_body not in ("chunked", "close"):
            raise ValueError(f"sse_body must be 'chunked' or 'close', not {options.sse_body!r}")
        self._chunked = options.sse_body == "chunked"
        self._route = options.route
        self._conn = h11.Connection(h11.SERVER)
        self._reader = RequestReader(self._conn)
        self._headers: dict[str, str] | None = None  # the request's, once it arrived whole
        #: the status the request was refused with (None: served)
        self.refused: int | None = None
        self._ended = False
        self._out = bytearray()
        self._error: CodecError | None = None

    def receive_data(self, data: bytes) -> None:
        """Feed the consumer's request. Bytes after the request are ignored."""
        if self._error is not None:
            raise self._error
        if not data or self.ready:
            return
        try:
            received = self._reader.feed(data)
        except CodecError as err:
            self._error = err
            raise
        if isinstance(received, Received):
            refused = None if self._route is None else received.refusal(self._route)
            if refused is None:
                self._accept(received.headers)
            else:
                self._refuse(refused, received.headers)
        elif isinstance(received, Refusal):
            self._refuse(received, {})

    @property
    def ready(self) -> bool:
        """True once the request arrived whole (its answer is then queued)."""
        return self._headers is not None

    @property
    def blocked(self) -> bool:
        """Never: HTTP/1.1 has no flow control above TCP."""
        return False

    def send_message(self, message: Message) -> None:
        """Frame one event: ``event:`` if kind, ``id:`` if id, one ``data:`` per line, blank line.

        Raises ``ValueError`` for a message that could not come back intact: data containing CR
        or not valid UTF-8, a kind or id containing CR or LF, an id containing NUL.
        """
        self._write(_frame(message))

    def heartbeat(self) -> None:
        """Frame the comment ``: ping`` and a blank line: keeps the link alive, is no message."""
        self._write(HEARTBEAT)

    def end(self, ok: bool = True) -> None:
        """Chunked and ``ok``: the last chunk. Otherwise nothing (the shell closes the socket)."""
        self._check_open()
        self._ended = True
        if ok and self._chunked:
            self._out += self._conn.send(h11.EndOfMessage())

    def data_to_send(self) -> bytes:
        """Response bytes not yet handed out."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def request_header(self, name: str) -> str | None:
        """A header of the request (case-insensitive name; the first if repeated), else None."""
        return None if self._headers is None else self._headers.get(name.lower())

    def _refuse(self, refused: Refusal, headers: dict[str, str]) -> None:
        self._headers, self.refused, self._ended = headers, refused.status, True
        self._out += refusal_bytes(self._conn, refused)

    def _accept(self, headers: dict[str, str]) -> None:
        self._headers = headers
        if not self._chunked:
            self._out += _CLOSE_DELIMITED_HEAD
            return
        response = h11.Response(
            status_code=200,
            reason=b"OK",
            headers=[
                ("Content-Type", "text/event-stream"),
                ("Cache-Control", "no-cache"),
                ("Transfer-Encoding", "chunked"),
            ],
        )
        self._out += self._conn.send(response)

    def _write(self, frame: bytes) -> None:
        """One frame, one h11 Data event: one HTTP chunk, or the bare bytes when close-delimited."""
        self._check_open()
        if self._chunked:
            self._out += self._conn.send(h11.Data(data=frame))
        else:
            self._out += frame

    def _check_open(self) -> None:
        if self._headers is None:
            raise RuntimeError("no request yet: wait until the server is ready")
        if self._ended:
            raise RuntimeError("the stream has ended")


def _frame(message: Message) -> bytes:
    """The wire form of one event; ``ValueError`` if it would not parse back to ``message``."""
    data = message.data
    if b"\r" in data:
        raise ValueError("SSE data must not contain CR (it would end a line)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("SSE data must be valid UTF-8") from None
    if any(c in message.kind + message.id for c in "\r\n"):
        raise ValueError("SSE kind and id must not contain CR or LF")
    if "\0" in message.id:
        raise ValueError("SSE id must not contain NUL (the client would ignore it)")
    parts: list[bytes] = []
    if message.kind:
        parts += [b"event: ", message.kind.encode("utf-8"), b"\n"]
    if message.id:
        parts += [b"id: ", message.id.encode("utf-8"), b"\n"]
    for line in data.split(b"\n"):
        parts += [b"data: ", line, b"\n"]
    parts.append(b"\n")
    return b"".join(parts)


def client(options: FramingOptions) -> SseClient:
    """A fresh consumer-side codec."""
    return SseClient(options)


def server(options: FramingOptions) -> SseServer:
    """A fresh producer-side codec."""
    return SseServer(options)
