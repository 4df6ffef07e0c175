"""A message stream in the body of an HTTP/1.1 response, on h11: what SSE and NDJSON over HTTP
share. Pure. Each framing brings its media type, its body parser (client) and how it writes one
message (server); everything else is here.

Client: sends the link's request (``http1.request_bytes``) and accepts only ``200`` with the
framing's content type; anything else fails the connection: an answer that is not 2xx with
``HTTP_STATUS``, quoting the status and the start of its body, anything else with
``PROTOCOL_ERROR``. How the stream may end depends on the body framing the server chose:

- Chunked (``options.sse_body == "chunked"``, the scenario's ``http_body``): the last chunk
  ``0\\r\\n\\r\\n`` is the explicit end and yields ``StreamEnd(ok=True)``. EOF before it is
  ``FRAME_TRUNCATED`` when a message is in progress and ``STREAM_END_MISSING``
  (``at_boundary=True``) when not. Only the body parser's state decides: a cut inside an HTTP
  chunk header or inside a chunk's trailing CRLF, right after a message ended, leaves no message
  in flight, so it is ``STREAM_END_MISSING``. A ``Content-Length`` body ends the same way.
- Close-delimited (``"close"``: ``Connection: close``, no length, no chunking): EOF is the only
  end, so at a boundary ``receive_eof`` returns ``[]`` and no ``StreamEnd``; inside a message it
  is ``FRAME_TRUNCATED``. h11 reports such an EOF as a clean ``EndOfMessage``; termination is not
  completion, so the parser's state is checked first.
- An explicit end arriving while a message is in progress is ``FRAME_TRUNCATED``: the incomplete
  message is discarded, never delivered.
- EOF before the response head is complete is ``STREAM_END_MISSING``: no message was in flight,
  and the stream never reached an end it could prove.

Server: reads the whole request (head and body, the body bounded) and answers it when the link's
route serves it; one it does not serve is refused as agent APIs refuse (404, 405, 415, 400, with
a JSON error body), and nothing is streamed. h11 always chooses chunked encoding for an HTTP/1.1
peer when no length is given, so the close-delimited head is written here by hand (the body is
then the bare message bytes). No ``Date`` header: the wire stays deterministic. ``end(ok=False)``
writes nothing, not even the last chunk: HTTP/1.1 has no failure status after the head, and a
chunked body without its terminator is how a server says "this response failed".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import h11

from reference_impl.errors import CodecError, ErrorCode, carrying
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing.http1 import ErrorAnswer, Received, RequestReader, refusal_bytes
from reference_impl.framing.http1 import request_bytes as http_request
from reference_impl.framing.options import FramingOptions
from reference_impl.framing.request import Refusal

HTTP_BODIES = ("chunked", "close")

#: the largest HTTP chunk a streamed response may announce (its messages are checked as they
#: come; a size past this is no stream's: ``ffffffffffffffff``)
MAX_CHUNK_BYTES = 1 << 32


class BodyParser(Protocol):
    """What turns a response body into messages (the event-stream parser, NDJSON's lines)."""

    def feed(self, data: bytes) -> Sequence[Event]: ...

    @property
    def in_progress(self) -> bool:
        """A message has started and not ended."""
        ...

    def partial(self) -> bytes: ...


class StreamClient:
    """Consumer side: sends the request, checks the response head, parses the body."""

    def __init__(
        self, options: FramingOptions, framing: str, media_type: str, parser: BodyParser
    ) -> None:
        self._options, self._framing = options, framing
        self._media_type = media_type.encode()
        self._parser = parser
        self._conn = h11.Connection(h11.CLIENT)
        self._head_seen = False  # a 200 response head of the right content type arrived
        self._refused: ErrorAnswer | None = None  # an answer that is not 2xx, being read
        self._ended = False  # h11 reported the body's end (explicitly, or by EOF)
        self._eof = False
        self._error: CodecError | None = None

    def initiate(self) -> bytes:
        """The link's request (with what ``_extra_headers`` adds)."""
        request = self._options.request
        method = request.method_for(self._framing)
        accept = self._media_type.decode()
        return http_request(self._conn, request, method, accept, self._extra_headers())

    def _extra_headers(self) -> tuple[tuple[str, str], ...]:
        return ()

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
        """Raw bytes of the message in flight; ``b""`` at a boundary."""
        return self._parser.partial()

    def expected_size(self) -> int | None:
        """Always None: a message in these bodies does not announce its size."""
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

    def _check_chunk(self) -> None:
        """Refuse a chunk size no stream has (``ffffffffffffffff``): h11 takes any, and would
        read the rest of the stream as one chunk. h11 keeps what is left of the chunk in
        flight in its reader (0.16: ``_bytes_in_chunk``); an h11 without it checks nothing."""
        left = getattr(getattr(self._conn, "_reader", None), "_bytes_in_chunk", 0)
        if isinstance(left, int) and left > MAX_CHUNK_BYTES:
            detail = f"HTTP: a chunk of more than {MAX_CHUNK_BYTES} bytes announced"
            raise CodecError(ErrorCode.PROTOCOL_ERROR, detail)

    def _next_event(self, at_eof: bool) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """h11's next event; its protocol errors as ``CodecError`` (at EOF: a cut body)."""
        try:
            return self._conn.next_event()
        except h11.RemoteProtocolError as exc:
            if at_eof:
                raise self._cut("EOF before the last chunk") from None
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"HTTP: {exc}") from None

    def _check_head(self, response: h11.Response) -> None:
        if not 200 <= response.status_code < 300:
            self._refused = ErrorAnswer(response)  # its body says why: read some of it first
            return
        if response.status_code != 200:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"status {response.status_code}, not 200")
        types = [value for name, value in response.headers if name == b"content-type"]
        # Compare the MIME essence: parameters (charset) are ignored, "text/event-streams" is not
        # a match even though it starts with the right prefix.
        if len(types) != 1 or types[0].split(b";", 1)[0].strip().lower() != self._media_type:
            given = ", ".join(repr(t.decode("latin-1")) for t in types) or "none"
            wanted = self._media_type.decode()
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"content type {given}, not {wanted}")
        self._head_seen = True

    def _end_of_body(self) -> list[Event]:
        self._ended = True
        if self._parser.in_progress:
            raise CodecError(ErrorCode.FRAME_TRUNCATED, "body ended inside a message")
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


class StreamServer:
    """Producer side: answers the request with a 200 stream of the framing's content type, then
    frames one message per ``send_message`` (one HTTP chunk each when chunked)."""

    def __init__(self, options: FramingOptions, content_type: str) -> None:
        if options.sse_body not in HTTP_BODIES:
            body = options.sse_body
            raise ValueError(f"the HTTP body must be 'chunked' or 'close', not {body!r}")
        self._chunked = options.sse_body == "chunked"
        self._content_type = content_type
        self._route = options.route
        self._conn = h11.Connection(h11.SERVER)
        self._reader = RequestReader(self._conn)
        self._headers: dict[str, str] | None = None  # the request's, once it arrived whole
        #: the status the request was refused with (None: served)
        self.refused: int | None = None
        self._ended = False
        self._out = bytearray()
        self._error: CodecError | None = None

    def frame(self, message: Message) -> bytes:
        """The wire form of one message; ``ValueError`` if it would not come back intact."""
        raise NotImplementedError

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
        """Frame one message (``frame``)."""
        self._write(self.frame(message))

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
        head = [("Content-Type", self._content_type), ("Cache-Control", "no-cache")]
        if not self._chunked:
            lines = [b"HTTP/1.1 200 OK", *(f"{n}: {v}".encode() for n, v in head)]
            self._out += b"\r\n".join([*lines, b"Connection: close", b"", b""])
            return
        head.append(("Transfer-Encoding", "chunked"))
        self._out += self._conn.send(h11.Response(status_code=200, reason=b"OK", headers=head))

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
