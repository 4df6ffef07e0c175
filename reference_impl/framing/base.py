"""The two sans-IO interfaces every framing implements.

A framing turns application messages into bytes on one TCP connection and back. Connection
protocols (SSE over HTTP/1.1, WebSocket, gRPC over HTTP/2) also carry a handshake and
acknowledgements, so both sides are state machines in the h11 style: feed received bytes, collect
events, and drain ``data_to_send()`` after every call.

Rules every implementation keeps (the tests in ``tests/framing`` check them for all six):

- ``receive_data`` may be called with any split of the byte stream, down to one byte at a time,
  and yields the same messages in the same order.
- ``receive_eof`` is explicit. Inside a message it raises ``CodecError(FRAME_TRUNCATED,
  at_boundary=False)``; between messages on a framing that has an explicit end (gRPC trailers,
  WebSocket close, HTTP chunked terminator) it raises ``CodecError(STREAM_END_MISSING,
  at_boundary=True)``. A shorter message is never returned.
- After a ``CodecError`` the codec is dead; further calls raise the same error again.
- Nothing here imports trio or touches a socket.
"""

from __future__ import annotations

from typing import Protocol

from reference_impl.events import Event, Message


class ClientCodec(Protocol):
    """The consumer's side: sends the request (if any), receives the message stream."""

    #: ``message_boundary_delimiter`` of seed 000, e.g. ``"u32be-length-prefix"``.
    delimiter: str

    def initiate(self) -> bytes:
        """Bytes to send first (HTTP request, WS handshake, HTTP/2 preface); ``b""`` if none."""
        ...

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes received from the producer; return the events they complete."""
        ...

    def receive_eof(self) -> list[Event]:
        """The producer closed its side. Returns the last events or raises ``CodecError``."""
        ...

    def data_to_send(self) -> bytes:
        """Bytes owed to the producer (acks, pongs, flow-control credit); ``b""`` if none."""
        ...

    def partial(self) -> bytes:
        """Bytes of the message in flight (its payload so far); ``b""`` at a boundary."""
        ...

    def expected_size(self) -> int | None:
        """Total payload size of the message in flight, when the framing announced it."""
        ...


class ServerCodec(Protocol):
    """The producer's side: answers the handshake, then frames messages."""

    #: the status a request the link's route does not serve was refused with (its answer is
    #: then in ``data_to_send()``, and nothing is streamed); None while served
    refused: int | None

    def receive_data(self, data: bytes) -> None:
        """Feed bytes received from the consumer (request, acks, flow-control credit)."""
        ...

    @property
    def ready(self) -> bool:
        """True once the handshake is done and messages may be sent."""
        ...

    @property
    def blocked(self) -> bool:
        """True while framed bytes wait for flow-control credit from the consumer."""
        ...

    def send_message(self, message: Message) -> None:
        """Frame one message; its bytes appear in ``data_to_send()``."""
        ...

    def end(self, ok: bool = True) -> None:
        """Finish the stream with the framing's explicit end, if it has one."""
        ...

    def data_to_send(self) -> bytes:
        """Framed bytes ready for the wire (as much as flow control allows)."""
        ...

    def request_header(self, name: str) -> str | None:
        """A header of the consumer's request (e.g. ``last-event-id``); None if absent."""
        ...


class RawServer:
    """What the two framings without a handshake share (length-prefixed, ndjson): no request,
    no flow control above TCP, no explicit end; subclasses frame messages into ``_out``."""

    def __init__(self, options: object) -> None:
        self._out = bytearray()
        self.refused: int | None = None  # there is no request to refuse

    def receive_data(self, data: bytes) -> None:
        """The consumer sends nothing on these framings; stray bytes are ignored."""

    @property
    def ready(self) -> bool:
        """Always: there is no handshake."""
        return True

    @property
    def blocked(self) -> bool:
        """Never: there is no flow control above TCP."""
        return False

    def send_message(self, message: Message) -> None:
        raise NotImplementedError

    def end(self, ok: bool = True) -> None:
        """No explicit end exists: the stream ends when the connection closes."""

    def data_to_send(self) -> bytes:
        """Framed bytes not yet handed out."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def request_header(self, name: str) -> str | None:
        """There is no request, hence no headers."""
        return None
