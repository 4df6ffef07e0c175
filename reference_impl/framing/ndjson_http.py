"""NDJSON over HTTP: ``application/x-ndjson`` lines in the body of an HTTP/1.1 response, as
Ollama's ``/api/chat`` and many gateways stream. Pure.

The HTTP is ``http_stream.py``'s (the link's request, usually a ``POST`` with a JSON body; the
response head checked for ``200`` and ``application/x-ndjson``, a refusal quoted with
``HTTP_STATUS``; a chunked body's last chunk as the explicit end, a close-delimited body ended by
EOF), the lines are ``ndjson.py``'s (the LF is the commit point; a CR before it is stripped;
blank lines are ignored; a line over ``max_message_bytes`` or not UTF-8 is an error). A line is
"in progress" from its first byte to its LF: a body that ends between them, by its last chunk or
by EOF, is ``FRAME_TRUNCATED``, never a shorter message.

The server writes one line per message, one HTTP chunk each when chunked; its heartbeat is a
blank line, which every NDJSON reader skips.
"""

from __future__ import annotations

from reference_impl.events import Event, Message
from reference_impl.framing.http_stream import StreamClient, StreamServer
from reference_impl.framing.ndjson import NdjsonClient, line
from reference_impl.framing.options import FramingOptions

__all__ = ["HEARTBEAT", "MEDIA_TYPE", "NdjsonHttpClient", "NdjsonHttpServer", "client", "server"]

MEDIA_TYPE = "application/x-ndjson"
#: a blank line: no JSON value, skipped by the client (``ndjson.py``)
HEARTBEAT = b"\n"


class _Lines:
    """NDJSON's line decoder as the body parser of an HTTP response."""

    def __init__(self, options: FramingOptions) -> None:
        self._lines = NdjsonClient(options)

    def feed(self, data: bytes) -> list[Event]:
        return self._lines.receive_data(data)

    @property
    def in_progress(self) -> bool:
        return bool(self._lines.partial())

    def partial(self) -> bytes:
        return self._lines.partial()


class NdjsonHttpClient(StreamClient):
    """Consumer side: the request, the response head, then one message per line."""

    delimiter = "LF"

    def __init__(self, options: FramingOptions) -> None:
        super().__init__(options, "ndjson-http", MEDIA_TYPE, _Lines(options))


class NdjsonHttpServer(StreamServer):
    """Producer side: answers the request with a 200 NDJSON stream, one line per message."""

    def __init__(self, options: FramingOptions) -> None:
        super().__init__(options, MEDIA_TYPE)

    def frame(self, message: Message) -> bytes:
        """One line (``ndjson.line``: no LF inside, not empty, not ending in CR)."""
        return line(message)

    def heartbeat(self) -> None:
        """A blank line: keeps the link alive, is no message."""
        self._write(HEARTBEAT)


def client(options: FramingOptions) -> NdjsonHttpClient:
    """A fresh consumer-side codec."""
    return NdjsonHttpClient(options)


def server(options: FramingOptions) -> NdjsonHttpServer:
    """A fresh producer-side codec."""
    return NdjsonHttpServer(options)
