"""Options shared by all framings."""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl import defaults
from reference_impl.framing.request import Request, Route

DEFAULT_MAX_MESSAGE_BYTES = defaults.MAX_MESSAGE_BYTES


@dataclass(frozen=True, slots=True)
class FramingOptions:
    """Knobs shared by all framings; each framing reads the ones that concern it."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: SSE ``Last-Event-ID`` the client sends when it reconnects (``""``: none).
    resume_id: str = ""
    #: The HTTP response body of SSE and NDJSON over HTTP (a scenario's ``http_body``, or
    #: ``sse_body``): ``"chunked"`` (explicit end) or ``"close"`` (EOF ends it).
    sse_body: str = "chunked"
    #: WebSocket messages as text (UTF-8 validated across fragments) or binary.
    ws_text: bool = True
    #: WebSocket: split each message into fragments of at most this many bytes (0: whole).
    ws_fragment_bytes: int = 0
    #: What the consumer sends (``request.py``): the HTTP request, the WebSocket upgrade's
    #: headers and first message, the gRPC call's metadata and message.
    request: Request = field(default_factory=Request)
    #: What the reference producer serves (None: any request, as a test server does; a link
    #: that describes its API serves that API only).
    route: Route | None = None

    @property
    def path(self) -> str:
        """The request's path (SSE, WebSocket, NDJSON over HTTP) or gRPC method path."""
        return self.request.path
