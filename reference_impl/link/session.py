"""The consumer's pure core: framing codec + payload side + seed guards -> ConsumerReport.

The trio shell (``consumer.py``) owns the socket and the clock; it calls this object with the bytes
it read and the time, asks ``deadline()`` for when to give up waiting, and reports how each
connection ended. Everything that decides a verdict happens here, without I/O, so the truncation
sweep in the tests runs in memory at every byte offset.

Decisions (docs/design.md decision 6 and seed 000's decision boundary):

- A new connection gets a new codec. A partial message left by the previous connection is never
  carried over: that connection's framing verdict is ``DISCARD_AND_RESET``.
- A connection that ends inside a message (FIN, RST) can never deliver the rest, so its partial
  buffer is evaluated as infinitely old: ``STALE_PARTIAL_BUFFER`` (digest ``STALE:inf``).
- A stall longer than ``incomplete_message_timeout`` with a partial buffer is evaluated at the real
  time it fired: ``STALE_PARTIAL_BUFFER`` with the real age; the stream is considered broken.
- A pause (``checkpoint``/``resume``) hands the partial buffer to a successor only when its hash
  verifies and the guard says ``MESSAGE_IN_PROGRESS``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

from reference_impl.errors import TRUNCATION_CODES, CodecError, ErrorCode
from reference_impl.events import Message, StreamEnd
from reference_impl.framing import make_client
from reference_impl.framing.base import ClientCodec
from reference_impl.framing_guard import (
    FramingManifest,
    FramingPolicy,
    FramingVerdict,
    StreamFramingGuard,
    StreamState,
)
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.payload.registry import payload
from reference_impl.payload.sides import Ending, PayloadSide
from reference_impl.report import (
    Accepted,
    AcceptedLog,
    ConnectionSummary,
    ConsumerReport,
    Recorded,
)

#: framing -> seed 000 framing mode
FRAMING_MODES = {
    "length-prefixed": "LENGTH_PREFIXED",
    "grpc": "LENGTH_PREFIXED",
    "websocket": "LENGTH_PREFIXED",
    "ndjson": "DELIMITED",
    "sse": "DELIMITED",
    "ndjson-http": "DELIMITED",
}


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Seed 000's state at a pause: the partial buffer, its hash, last-byte time, expected size."""

    buffer: bytes
    partial_buffer_state_hash: str
    last_byte_epoch: float
    expected_size: int | None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ConsumerSession:
    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self._side: PayloadSide = payload(config.payload).side(config)
        self._codec: ClientCodec | None = None
        self._accepted = AcceptedLog()  # only with config.list_accepted
        self._accepted_count = 0
        self._connections: list[ConnectionSummary] = []
        self._conn_reads = 0
        self._conn_bytes = 0
        self._raw = hashlib.sha256()  # bytes of the current connection (partial_stream_hash)
        self._last_byte = 0.0  # any byte: the idle timer
        self._last_content = 0.0  # a message the payload counts as content: the content timer
        self._last_message_byte = 0.0  # the last byte that advanced a message (seed 000 gate 3)
        self._last_id = ""
        self._error: CodecError | None = None
        self._stream_end: StreamEnd | None = None
        self._final: FramingManifest | None = None
        self._ending: Ending | None = None
        self._cut_inside = False  # the connection ended inside a frame header (see _in_message)
        #: what refused the stream: "payload" (a whole message) or "framing" (the codec); the
        #: verdict is then taken where that happened, not from bytes that came after it
        self._refused_by: str | None = None

    # -- connection lifecycle -------------------------------------------------------------
    def connect(self, now: float) -> bytes:
        """Start connection n+1 and return the bytes to send first."""
        if self._codec is not None and self._ending is None:
            raise RuntimeError("connect() before the previous connection ended")
        if self._ending is not None and not (self.config.resume and self._last_id):
            # a restarted stream's result stands alone: the abandoned attempt's messages are
            # never handed on with it (the restart brings them again); a producer that would
            # continue restarts too when no event id is there to resume after
            self._side = payload(self.config.payload).side(self.config)
            self._accepted.clear()
            self._accepted_count = 0
        options = self.config.framing_options
        if self.config.resume and self._last_id:
            options = replace(options, resume_id=self._last_id)
        self._codec = make_client(self.config.framing, options)
        self._conn_reads = self._conn_bytes = 0
        self._raw = hashlib.sha256()
        self._last_byte = self._last_message_byte = self._last_content = now
        self._error, self._stream_end, self._final, self._ending = None, None, None, None
        self._cut_inside, self._refused_by = False, None
        return self._codec.initiate()

    @property
    def connection(self) -> int:
        return len(self._connections) + 1

    @property
    def done(self) -> bool:
        """True once this connection reached a verdict; the shell stops reading."""
        return self._ending is not None

    @property
    def accepted_count(self) -> int:
        return self._accepted_count

    @property
    def has_partial(self) -> bool:
        return self._has_partial()

    def should_reconnect(self) -> bool:
        """After a connection ended: is it worth another? Not after a complete result or a
        content error (those are verdicts, not accidents of transport)."""
        if self._ending is None or self._final is None:
            return False
        if self._ending.end not in ("eof", "rst", "timeout"):
            return False
        return not self._side.finished(self._ending)

    def failed_to_connect(self, err: CodecError) -> ConsumerReport:
        """The report when not even the first connection could be made."""
        return ConsumerReport(
            verdict=err.code.value, complete=False, error_code=err.code.value, detail=err.detail
        )

    def deadline(self) -> float:
        """When to stop waiting for the next byte; with a content timeout, also when to stop
        waiting for content (keep-alives that arrive meanwhile do not move it)."""
        if self._has_partial():
            wait = self._last_message_byte + self.config.incomplete_message_timeout_s
        else:
            wait = self._last_byte + self.config.idle_timeout_s
        content = self.config.content_idle_timeout_s
        return wait if content is None else min(wait, self._last_content + content)

    def receive(self, data: bytes, now: float) -> bytes:
        """Feed bytes read from the link; return bytes owed to the producer."""
        codec = self._require_codec()
        self._conn_reads += 1
        self._conn_bytes += len(data)
        self._raw.update(data)
        self._last_byte = now
        progress_before = self._progress(codec)
        content_before = self._side.content
        if self.config.unframed:
            self._fail(CodecError(ErrorCode.MALFORMED_FRAME, "unframed stream"), "error")
            return b""
        try:
            events = codec.receive_data(data)
        except CodecError as err:
            # what the read completed before the bad byte is delivered, then the error decides
            self._handle(err.events)
            if not self.done:
                self._fail(err, "error", refused_by="framing")
            return b""
        self._handle(events)
        if self._progress(codec) != progress_before:
            self._last_message_byte = now  # bytes that advanced a message, not heartbeats
        if self._side.content != content_before:
            self._last_content = now  # a message with content, not a ping
        return b"" if self.done else codec.data_to_send()

    def end_of_stream(self, how: str, now: float) -> None:
        """The connection ended: ``"eof"`` (FIN), ``"rst"`` or ``"timeout"``."""
        if self.done:
            return
        codec = self._require_codec()
        if how == "eof":
            try:
                self._handle(codec.receive_eof())
            except CodecError as err:
                self._fail(err, "eof", refused_by="framing")
                return
            if not self.done:
                self._conclude("eof", None, now)
            return
        code = ErrorCode.CONNECTION_RESET if how == "rst" else ErrorCode.IDLE_TIMEOUT
        self._cut_inside = self._eof_would_cut(codec)
        self._fail(CodecError(code, how, at_boundary=not self._in_message(None)), how, now)

    def _progress(self, codec: ClientCodec) -> tuple[int, int, bool]:
        """What advances a message: one completed, its bytes grew, or one started (its size was
        announced before any payload byte). A heartbeat changes none of these."""
        return len(self._accepted), len(codec.partial()), self._has_partial()

    @staticmethod
    def _eof_would_cut(codec: ClientCodec) -> bool:
        """Would the codec call an end here a cut inside a message? (It knows about frame
        headers cut short that ``partial()`` cannot show.) The connection is over, so spending
        the codec on the question costs nothing; what it would still hand out is not taken."""
        try:
            codec.receive_eof()
        except CodecError as err:
            return err.code is ErrorCode.FRAME_TRUNCATED and not err.at_boundary
        return False

    # -- pause and hand-over (seed 000 decision boundary 2 and 3) --------------------------
    def checkpoint(self) -> Checkpoint:
        codec = self._require_codec()
        buffer = codec.partial()
        return Checkpoint(buffer, _sha256(buffer), self._last_message_byte, codec.expected_size())

    def resume(self, checkpoint: Checkpoint, now: float) -> FramingManifest:
        """The successor's check before it continues the message in flight."""
        intact = _sha256(self._require_codec().partial()) == checkpoint.partial_buffer_state_hash
        intact = intact and _sha256(checkpoint.buffer) == checkpoint.partial_buffer_state_hash
        state = StreamState(
            self._mode() if intact else "UNFRAMED",
            checkpoint.partial_buffer_state_hash if checkpoint.buffer else None,
            checkpoint.last_byte_epoch,
            checkpoint.expected_size,
        )
        policy = FramingPolicy(self.config.incomplete_message_timeout_s, now)
        manifest = StreamFramingGuard.evaluate_stream(state, policy)
        if manifest.verdict in (
            FramingVerdict.STALE_PARTIAL_BUFFER,
            FramingVerdict.DISCARD_AND_RESET,
        ):
            self._finish(
                "paused-stale", CodecError(ErrorCode.IDLE_TIMEOUT, "stale after pause"), manifest
            )
        return manifest

    # -- internals -----------------------------------------------------------------------
    def _require_codec(self) -> ClientCodec:
        if self._codec is None:
            raise RuntimeError("connect() first")
        return self._codec

    def _mode(self) -> str:
        return "UNFRAMED" if self.config.unframed else FRAMING_MODES[self.config.framing]

    def _has_partial(self) -> bool:
        """A message is in flight: bytes of it arrived, or its size was announced."""
        codec = self._codec
        return codec is not None and (bool(codec.partial()) or codec.expected_size() is not None)

    def _handle(self, events: list[Message | StreamEnd]) -> None:
        for event in events:
            if isinstance(event, StreamEnd):
                self._stream_end = event
                self._conclude("stream-end", None, self._last_byte)
                return
            try:
                self._side.feed(event)
            except CodecError as err:
                self._fail(err, "error", refused_by="payload")
                return
            self._accepted_count += 1
            if self.config.list_accepted:
                self._accepted.add(Accepted.of(event.data, self.connection))
            # the id in force at this event's dispatch: an empty one reset it (WHATWG: no
            # Last-Event-ID then), and it persists across events that have none of their own
            self._last_id = event.id

    def _fail(
        self, err: CodecError, end: str, now: float | None = None, *, refused_by: str = ""
    ) -> None:
        """End the connection on ``err``. A refusal decides where it happened: by the payload,
        at the end of the whole message it refused (bytes of the next message that came in the
        same read change nothing); by the codec, for breaking the framing's rules (not for a
        stream that merely ended early), the stream can no longer be parsed at all: seed 000's
        gate 1 (``DISCARD_AND_RESET``), whatever the codec had buffered when it failed."""
        self._error = err
        if refused_by == "payload" or err.code not in TRUNCATION_CODES:
            self._refused_by = refused_by or None
        self._conclude(end, err, self._last_byte if now is None else now)

    def _in_message(self, err: CodecError | None) -> bool:
        """A message was in flight when the connection ended: the codec holds part of one, or
        said the stream stopped inside one (e.g. inside a WebSocket or HTTP/2 frame header,
        before any payload byte). Not after a payload refused a whole message."""
        if self._refused_by == "payload":
            return False
        cut_inside = self._cut_inside or (
            err is not None and err.code is ErrorCode.FRAME_TRUNCATED and not err.at_boundary
        )
        return self._has_partial() or cut_inside

    def _conclude(self, end: str, err: CodecError | None, now: float) -> None:
        codec = self._require_codec()
        partial = codec.partial()
        state = StreamState(
            "UNFRAMED" if self._refused_by == "framing" else self._mode(),
            _sha256(partial) if self._in_message(err) else None,
            self._last_message_byte,
            codec.expected_size(),
        )
        # A closed or failed connection can never deliver the rest of a partial message.
        epoch = now if end == "timeout" else math.inf
        manifest = StreamFramingGuard.evaluate_stream(
            state, FramingPolicy(self.config.incomplete_message_timeout_s, epoch)
        )
        self._finish(end, err, manifest)

    def _finish(self, end: str, err: CodecError | None, manifest: FramingManifest) -> None:
        codec = self._require_codec()
        self._error = err
        self._final = manifest
        in_message = self._in_message(err)
        partial = codec.partial() if in_message else b""
        self._ending = Ending(end, err, partial, self._stream_end, in_message)
        self._connections.append(
            ConnectionSummary(
                end,
                manifest.verdict.name,
                err.code.value if err else None,
                self._conn_reads,
                self._conn_bytes,
            )
        )

    def discard_on_reconnect(self) -> None:
        """Mark the ended connection's partial buffer as discarded (a reconnect follows)."""
        if self._connections and self._ending is not None and self._ending.in_message:
            last = self._connections[-1]
            self._connections[-1] = ConnectionSummary(
                last.end,
                FramingVerdict.DISCARD_AND_RESET.name,
                last.error_code,
                last.reads,
                last.bytes_received,
            )

    def report(self) -> ConsumerReport:
        """The final report, from the last connection's ending and the payload side."""
        if self._ending is None or self._final is None:
            raise RuntimeError("report() before the stream ended")
        codec = self._require_codec()
        conclusion = self._side.conclude(self._ending, self._final)
        partial = self._ending.partial
        recorded = Recorded(
            message_boundary_delimiter=codec.delimiter,
            partial_buffer_state_hash=_sha256(partial) if self._ending.in_message else None,
            expected_message_size=codec.expected_size(),
            incomplete_message_timeout=self.config.incomplete_message_timeout_s,
            stream_completion_signal_receipt=conclusion.completion_receipt,
            expected_stream_length_hint=conclusion.length_hint,
            partial_stream_hash=self._raw.hexdigest(),
            stream_recovery_predicate=conclusion.recovery_predicate,
        )
        return ConsumerReport(
            verdict=conclusion.verdict,
            complete=conclusion.complete,
            error_code=conclusion.error_code,
            framing_verdict=self._connections[-1].framing_verdict,
            # a payload that refused its stream hands nothing on (fail closed)
            accepted=tuple(self._accepted.listed) if conclusion.hands_on else (),
            accepted_past=self._accepted.past if conclusion.hands_on else (),
            connections=tuple(self._connections),
            reads=sum(c.reads for c in self._connections),
            recorded=recorded,
            manifest_digest=conclusion.manifest_digest,
            directive=conclusion.directive,
            detail=self._error.detail if self._error else "",
            accepted_count=None
            if self.config.list_accepted
            else (self._accepted_count if conclusion.hands_on else 0),
        )
