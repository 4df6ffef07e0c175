"""The Python consumer API (pure): what a consumer function is given and what it hands on.

A consumer function takes one ``LinkInfo`` and hands on the messages its application gets, in
order: it returns an iterable of them, or is a generator that yields them, sync or async.
Each message is ``bytes`` (or ``str``, taken as UTF-8), or a ``Message`` when it must say which
connection it arrived on. Returning normally means the application saw a normal end of the
stream; raising means the client surfaced a failure. tearline builds the report from that
(``harness.consumers.report``); see ``docs/python-consumers.md``.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from reference_impl import defaults

Framing = Literal["length-prefixed", "ndjson", "sse", "websocket", "grpc", "ndjson-http"]

#: the request path of the reference producer (SSE, WebSocket) and its gRPC method path
#: (``reference_impl.framing.options.FramingOptions.path``; a test keeps them equal, and this
#: module stays free of the codecs, so that a consumer worker starts fast)
STREAM_PATH = defaults.REQUEST_PATH
_SCHEMES = {"sse": "http", "websocket": "ws", "grpc": "http", "ndjson-http": "http"}


@dataclass(frozen=True, slots=True)
class Message:
    """One message handed on, with the connection it arrived on (1-based, in the order the
    client opened them). Plain ``bytes``/``str`` mean connection 1."""

    data: bytes | str
    connection: int = 1


@dataclass(frozen=True, slots=True)
class LinkInfo:
    """Everything a consumer function is told about its case's link. Times in seconds."""

    #: where to connect: the fault proxy, on loopback
    host: str
    port: int
    framing: str
    payload: str
    #: the token profile (``openai``, ``anthropic``, ``generic``); None unless payload tokens
    profile: str | None
    #: ``http://host:port/stream`` (SSE, NDJSON over HTTP, gRPC) or ``ws://host:port/stream``;
    #: None for the framings without HTTP (``length-prefixed``, ``ndjson``: plain TCP)
    url: str | None
    #: the request path (SSE, WebSocket) or gRPC method path the reference producer serves
    path: str = STREAM_PATH
    #: the request to make, as agents make theirs (``link.request``; ``{host}`` and ``{port}``
    #: filled in): its method, its headers as (name, value) pairs, its body
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    #: a partial message older than this is stale (seed 000)
    incomplete_message_timeout_s: float = 1.0
    #: how long to wait at a message boundary for the next byte before calling the link dead
    idle_timeout_s: float = 5.0
    #: the case's deadline: the function must have returned or raised by then
    deadline_s: float = 10.0
    #: how many times the client may reconnect after the link breaks
    max_reconnects: int = 0
    #: the largest message the client should accept
    max_message_bytes: int = 16 * 1024 * 1024
    #: seed 002's policy: a token stream cut between frames is a partial result
    accept_partial_at_safe_boundary: bool = False
    #: the HTTP body of sse and ndjson-http: ``chunked`` (explicit end) or ``close`` (EOF
    #: ends it)
    sse_body: str = "chunked"
    #: WebSocket messages as text (True) or binary
    ws_text: bool = True
    #: what a reconnecting client gets from the producer: ``restart`` (the stream from its
    #: start: the result is the last attempt's messages) or ``continue`` (SSE: resumed after
    #: the ``Last-Event-ID`` sent: the result is the resumed sequence)
    producer_mode: str = "restart"
    #: how many bytes the reference consumer asks for per read (a hint)
    read_bytes: int = defaults.READ_BYTES
    #: seed 000's pause: once this many messages were handed on and the next is in flight,
    #: pause ``pause_s`` and check the partial buffer (None: no pause)
    pause_at_message: int | None = None
    pause_s: float = 0.0
    #: treat the stream as unframed (seed 000 gate 1): refuse it, raise at once
    unframed: bool = False
    #: connect with TLS (the proxy's certificate is for ``host``)
    tls: bool = False
    #: over TLS: the PEM file of the run's test CA, which issued the proxy's certificate
    #: (None: plain TCP)
    ca_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As JSON takes it: the body in base64, the headers as lists."""
        raw = asdict(self)
        raw["body"] = base64.b64encode(self.body).decode()
        raw["headers"] = [list(pair) for pair in self.headers]
        return raw

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LinkInfo:
        names = {f.name for f in fields(cls)}
        given = {key: value for key, value in raw.items() if key in names}
        if "body" in given:
            given["body"] = base64.b64decode(given["body"])
        if "headers" in given:
            given["headers"] = tuple((name, value) for name, value in given["headers"])
        return cls(**given)


def url_for(framing: str, host: str, port: int, path: str = STREAM_PATH) -> str | None:
    """The URL a client library is pointed at; None for the plain-TCP framings."""
    scheme = _SCHEMES.get(framing)
    if scheme is None:
        return None
    where = f"[{host}]" if ":" in host else host
    return f"{scheme}://{where}:{port}{path}"


MessageLike = bytes | bytearray | memoryview | str | Message
#: what a consumer function may be: sync or async, returning or yielding messages
ConsumerFunction = Callable[
    [LinkInfo],
    Iterable[MessageLike] | AsyncIterable[MessageLike] | Awaitable[Iterable[MessageLike]],
]
