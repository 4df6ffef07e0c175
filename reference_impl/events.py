"""Frozen event nouns that the framing codecs hand to the payload layer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One whole application message, exactly as the producer framed it.

    ``kind`` is the SSE event type (``""`` when absent, and on framings that have none).
    ``id`` is the SSE ``id`` field in force when the event was dispatched (``""`` elsewhere).
    """

    data: bytes
    kind: str = ""
    id: str = ""


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """The framing's own explicit end: gRPC trailers, a WebSocket close frame, a chunked body's
    last chunk. ``ok`` is False when the peer ended with a failure status; ``detail`` names it
    (``"grpc-status 13"``, ``"close 1011"``)."""

    ok: bool
    detail: str = ""


Event = Message | StreamEnd
