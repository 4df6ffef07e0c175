"""Error codes of the reference link, and the one exception that carries them.

Codes are values: tests compare ``err.code``, never message text. The tree is flat on purpose:

- ``CodecError(code, detail)``: raised by every sans-IO codec, payload verifier and guard helper.
  ``at_boundary`` tells whether the stream stopped between messages (True) or inside one (False);
  it only matters for truncation codes.

The envelope codes keep the spelling of seed 001; the rest are ours.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reference_impl.events import Event


class ErrorCode(StrEnum):
    # framing layer
    FRAME_TOO_LARGE = "FRAME_TOO_LARGE"  # declared or accumulated size above the configured maximum
    FRAME_TRUNCATED = "FRAME_TRUNCATED"  # stream ended inside a message
    STREAM_END_MISSING = "STREAM_END_MISSING"  # ended between messages, but without the framing's
    #                                            explicit end (gRPC trailers, WS close, chunk 0)
    MALFORMED_FRAME = "MALFORMED_FRAME"  # bytes that cannot be a frame of this framing
    INVALID_UTF8 = "INVALID_UTF8"  # text that must be UTF-8 is not (never repaired)
    PROTOCOL_ERROR = "PROTOCOL_ERROR"  # HTTP/WS/HTTP2 rule broken, or unexpected handshake
    REMOTE_ERROR = "REMOTE_ERROR"  # peer ended explicitly with a failure (grpc-status != 0, ...)
    HTTP_STATUS = "HTTP_STATUS"  # the service answered the request with an error status (not 2xx)
    # payload layer: seed 001 result envelope
    ERR_ZPARQL_STREAM_TRUNCATED = "ERR_ZPARQL_STREAM_TRUNCATED"
    ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH = "ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH"
    # payload layer: messages and tokens
    MALFORMED_PAYLOAD = "MALFORMED_PAYLOAD"  # a whole frame whose content is not what the payload
    #                                          expects (bad JSON, unknown event)
    OUTPUT_TRUNCATED = "OUTPUT_TRUNCATED"  # the producer ended properly, but said its output was
    #                                        cut at its length limit (max_tokens, length, ...)
    SEQUENCE_BROKEN = "SEQUENCE_BROKEN"  # an event's sequence number is not the next one: a gap,
    #                                      a duplicate or a reordering
    # connection layer (consumer shell)
    CONNECTION_RESET = "CONNECTION_RESET"
    CONNECT_FAILED = "CONNECT_FAILED"
    IDLE_TIMEOUT = "IDLE_TIMEOUT"  # no byte for longer than incomplete_message_timeout


#: codes that say a stream ended early (or its peer ended it) rather than broke a rule
TRUNCATION_CODES = frozenset(
    {
        ErrorCode.FRAME_TRUNCATED,
        ErrorCode.STREAM_END_MISSING,
        ErrorCode.CONNECTION_RESET,
        ErrorCode.IDLE_TIMEOUT,
        ErrorCode.REMOTE_ERROR,
        ErrorCode.OUTPUT_TRUNCATED,
    }
)


class CodecError(Exception):
    """A stream violated its framing or payload rules; ``code`` says which rule."""

    def __init__(self, code: ErrorCode, detail: str = "", *, at_boundary: bool = False) -> None:
        super().__init__(f"{code}: {detail}" if detail else str(code))
        self.code = code
        self.detail = detail
        self.at_boundary = at_boundary
        #: whole events the failing call completed before the bad byte, in stream order: a
        #: codec hands them on with the error, so what is delivered before an error does not
        #: depend on how reads were split
        self.events: list[Event] = []


@contextmanager
def carrying(events: Sequence[Event]) -> Iterator[None]:
    """Attach ``events`` (completed at this level before the call inside) to a CodecError
    raised inside, ahead of whatever the inner levels attached."""
    try:
        yield
    except CodecError as err:
        err.events[:0] = events
        raise
