"""SSE framing: a ``text/event-stream`` response body over HTTP/1.1 (``http_stream.py`` does
the HTTP: the request, the response head, the body's end, refusals).

The client sends the link's request (``GET`` by default, ``POST`` with a body, as agent APIs are
called; ``Accept: text/event-stream`` unless the request names one; ``Last-Event-ID`` when
resuming) and accepts only ``200`` with a ``text/event-stream`` content type; anything else
fails the connection, as the WHATWG EventSource does (catalogue case 35). The body goes to
``EventStreamParser`` (``sse_parser.py``), which knows the event-stream rules. How a chunked or a
close-delimited body may end (catalogue cases 1, 2, 15, 16) is ``http_stream.py``'s docstring;
an event is what is "in progress" there.

The server frames one event per message, one HTTP chunk each when chunked, and can send the
comment ``: ping`` as a heartbeat (catalogue case 19).
"""

from __future__ import annotations

from reference_impl.events import Message
from reference_impl.framing.http_stream import StreamClient, StreamServer
from reference_impl.framing.options import FramingOptions
from reference_impl.framing.sse_parser import EventStreamParser

__all__ = ["HEARTBEAT", "SseClient", "SseServer", "client", "server"]

#: The comment a producer sends to keep an idle stream alive (catalogue case 19).
HEARTBEAT = b": ping\n\n"
MEDIA_TYPE = "text/event-stream"


class SseClient(StreamClient):
    """Consumer side: the request, the response head, then the event stream."""

    delimiter = "blank-line"

    def __init__(self, options: FramingOptions) -> None:
        self._events = EventStreamParser(options.max_message_bytes)
        super().__init__(options, "sse", MEDIA_TYPE, self._events)

    @property
    def last_event_id(self) -> str:
        """The id to resume from (``Last-Event-ID``): the one in force at the last blank line."""
        return self._events.last_event_id

    @property
    def retry_ms(self) -> int | None:
        """The last valid ``retry`` field in milliseconds; None if the server sent none."""
        return self._events.retry_ms

    def _extra_headers(self) -> tuple[tuple[str, str], ...]:
        """``Last-Event-ID`` when ``options.resume_id`` is set."""
        resume_id = self._options.resume_id
        if not resume_id:
            return ()
        if any(c in resume_id for c in "\r\n\0"):
            raise ValueError("resume_id must not contain CR, LF or NUL")
        return (("Last-Event-ID", resume_id),)


class SseServer(StreamServer):
    """Producer side: answers the request with a 200 event stream, one event per message."""

    def __init__(self, options: FramingOptions) -> None:
        super().__init__(options, MEDIA_TYPE)

    def frame(self, message: Message) -> bytes:
        """One event: ``event:`` if kind, ``id:`` if id, one ``data:`` per line, blank line.

        Raises ``ValueError`` for a message that could not come back intact: data containing CR
        or not valid UTF-8, a kind or id containing CR or LF, an id containing NUL.
        """
        return _frame(message)

    def heartbeat(self) -> None:
        """Frame the comment ``: ping`` and a blank line: keeps the link alive, is no message."""
        self._write(HEARTBEAT)


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
