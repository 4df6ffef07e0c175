"""Options shared by all framings."""

from __future__ import annotations

from dataclasses import dataclass

from reference_impl import defaults

DEFAULT_MAX_MESSAGE_BYTES = defaults.MAX_MESSAGE_BYTES


@dataclass(frozen=True, slots=True)
class FramingOptions:
    """Knobs shared by all framings; each framing reads the ones that concern it."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: SSE ``Last-Event-ID`` the client sends when it reconnects (``""``: none).
    resume_id: str = ""
    #: SSE response body framing: ``"chunked"`` (explicit end) or ``"close"`` (EOF ends it).
    sse_body: str = "chunked"
    #: WebSocket messages as text (UTF-8 validated across fragments) or binary.
    ws_text: bool = True
    #: WebSocket: split each message into fragments of at most this many bytes (0: whole).
    ws_fragment_bytes: int = 0
    #: Request path (SSE, WebSocket) or gRPC method path.
    path: str = defaults.REQUEST_PATH
