"""Broken consumers: an SSE event-stream parser that gets one WHATWG parsing rule wrong.

``python -m tests.broken.sse_rules RULE`` runs an SSE consumer whose own event-stream parser
(WHATWG HTML §9.2.6, written out below; HTTP by h11, the payload by the reference payload
layer) is right in every rule but ``RULE``, which it gets wrong the way real parsers do:

| rule | the bug |
| --- | --- |
| ``joins-data-lines`` | the lines of a multi-line ``data`` are joined with nothing, not LF |
| ``strips-every-space`` | every space after ``data:`` is stripped, not one |
| ``lone-cr-is-no-line-end`` | lines are split at LF (a CR before it dropped): a lone CR ends none |
| ``crlf-is-two-line-ends`` | CR and LF each end a line: a CRLF is a line and a blank line |
| ``keeps-the-bom`` | a byte order mark before the first field is kept (the field is unknown) |
| ``colon-less-line-ignored`` | a line without a colon is skipped (a field, its value empty) |
| ``comment-dispatches`` | a comment line (``: ping``) dispatches the event in progress |
| ``final-event-at-eof`` | at the stream's end the event without its blank line is dispatched |
| ``empty-id-ignored`` | ``id`` with an empty value leaves the last event id as it was |
| ``id-taken-before-dispatch`` | an event's ``id`` is the last event id before it is dispatched |
| ``named-events-dropped`` | only events without an ``event`` type are handed on (``onmessage``) |
| ``unknown-field-refused`` | a field but ``data``, ``event``, ``id`` (``retry``) fails the stream |

``RULE`` ``none`` is the parser with no bug (the baseline each rule is compared with). It
reconnects like ``reconnecting.py`` (``{producer_mode}``: restart drops the result, continue
sends the last event id), so the id rules show on a resumed stream.

Speaks: sse; every payload.
"""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import dataclass, field

import h11

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import StreamEnd
from reference_impl.report import ConsumerReport
from tests.broken.contract import (
    ALL_PAYLOADS,
    READ_BYTES,
    Tally,
    Target,
    connect,
    emit,
    read_some,
    send,
    transport_error,
)
from tests.broken.payload import PayloadLayer

FRAMINGS = ("sse",)
PAYLOADS = ALL_PAYLOADS
HONOURS = ("max_reconnects",)
RULES = (
    "joins-data-lines",
    "strips-every-space",
    "lone-cr-is-no-line-end",
    "crlf-is-two-line-ends",
    "keeps-the-bom",
    "colon-less-line-ignored",
    "comment-dispatches",
    "final-event-at-eof",
    "empty-id-ignored",
    "id-taken-before-dispatch",
    "named-events-dropped",
    "unknown-field-refused",
)
BOM = "\ufeff".encode()


@dataclass(frozen=True, slots=True)
class Event:
    data: bytes
    kind: str


@dataclass(slots=True)
class EventStream:
    """WHATWG's event-stream interpretation, fed bytes as they come, with one ``bug``."""

    bug: str = "none"
    line: bytearray = field(default_factory=bytearray)
    after_cr: bool = False  # the last line ended at a CR: an LF right after belongs to it
    started: bool = False  # the first bytes were seen (a BOM is only stripped there)
    head: bytes = b""  # the first bytes, while they may still be the start of a BOM
    data: list[bytes] = field(default_factory=list)
    kind: str = ""
    id_buffer: str = ""
    last_id: str = ""
    has_data: bool = False
    fields: int = 0  # field lines of the event in progress (an id line opens one too)

    def feed(self, chunk: bytes) -> list[Event]:
        if not self.started:
            # the stream's first bytes are held until they prove to be a BOM or not (one may
            # arrive split across reads)
            self.head += chunk
            if len(self.head) < len(BOM) and BOM.startswith(self.head):
                return []
            self.started, chunk, self.head = True, self.head, b""
            if chunk.startswith(BOM) and self.bug != "keeps-the-bom":
                chunk = chunk[len(BOM) :]
        events: list[Event] = []
        for byte in chunk:
            events += self._byte(byte)
        return events

    def _byte(self, byte: int) -> list[Event]:
        if self.bug == "lone-cr-is-no-line-end":
            if byte == 0x0A:
                line = bytes(self.line).removesuffix(b"\r")
                self.line.clear()
                return self._line(line)
            self.line.append(byte)
            return []
        if byte == 0x0A and self.after_cr and self.bug != "crlf-is-two-line-ends":
            self.after_cr = False
            return []  # the LF of a CRLF
        self.after_cr = byte == 0x0D
        if byte in (0x0A, 0x0D):
            line = bytes(self.line)
            self.line.clear()
            return self._line(line)
        self.line.append(byte)
        return []

    def _line(self, line: bytes) -> list[Event]:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return self._dispatch() if self.bug == "comment-dispatches" else []
        name, colon, value = line.partition(b":")
        if not colon and self.bug == "colon-less-line-ignored":
            return []
        every = self.bug == "strips-every-space"
        value = value.lstrip(b" ") if every else value.removeprefix(b" ")
        self.fields += 1
        self._field(name.decode("utf-8", "replace"), value)
        return []

    def _field(self, name: str, value: bytes) -> None:
        if name == "data":
            self.data.append(value)
            self.has_data = True
        elif name == "event":
            self.kind = value.decode("utf-8", "replace")
        elif name == "id":
            if b"\0" in value or (not value and self.bug == "empty-id-ignored"):
                return
            self.id_buffer = value.decode("utf-8", "replace")
            if self.bug == "id-taken-before-dispatch":
                self.last_id = self.id_buffer
        elif self.bug == "unknown-field-refused":
            raise CodecError(ErrorCode.MALFORMED_FRAME, f"unknown SSE field {name!r}")
        # ``retry`` and unknown fields change no event (this consumer reconnects at once)

    def _dispatch(self) -> list[Event]:
        self.last_id = self.id_buffer
        self.fields = 0
        if not self.has_data:
            self.kind = ""
            return []
        joiner = b"" if self.bug == "joins-data-lines" else b"\n"
        event = Event(joiner.join(self.data), self.kind)
        self.data, self.kind, self.has_data = [], "", False
        if event.kind and self.bug == "named-events-dropped":
            return []
        return [event]

    def end(self) -> list[Event]:
        """The stream ended: an event without its blank line is discarded."""
        if self.bug == "final-event-at-eof":
            if self.line:
                self._line(bytes(self.line))
                self.line.clear()
            return self._dispatch()
        return []

    @property
    def in_event(self) -> bool:
        return bool(self.line) or self.fields > 0

    @property
    def progress(self) -> tuple[int, int, int]:
        """What advances an event (a comment, a heartbeat, advances none)."""
        line = 0 if self.line.startswith(b":") else len(self.line)
        return self.fields, sum(len(d) for d in self.data), line


def request(target: Target, last_id: str) -> h11.Request:
    headers = [("Host", target.host), ("Accept", "text/event-stream")]
    if last_id:
        headers.append(("Last-Event-ID", last_id))
    return h11.Request(method="GET", target="/stream", headers=headers)


def body_of(conn: h11.Connection) -> tuple[bytes, bool]:
    """The body bytes h11 has now, and whether the response ended."""
    body = b""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Response) and event.status_code != 200:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, f"status {event.status_code}")
        if isinstance(event, h11.Data):
            body += bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            return body, True
        if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
            return body, False


@dataclass(slots=True)
class Attempt:
    """How one connection ended."""

    end: str = ""
    error: CodecError | None = None
    finished: bool = False  # the HTTP response ended (its last chunk)


def read_attempt(
    target: Target, stream: EventStream, tally: Tally, payload: PayloadLayer
) -> Attempt:
    conn = h11.Connection(h11.CLIENT)
    last_progress = time.monotonic()  # the last byte that advanced an event
    with connect(target) as sock:
        send(sock, conn.send(request(target, stream.last_id)) + conn.send(h11.EndOfMessage()))
        while True:
            data, end = read_within(sock, target, stream, last_progress)
            if end in ("rst", "timeout"):
                return Attempt(end, transport_error(end, stream.in_event))
            tally.received(data)
            try:
                conn.receive_data(data)  # b"" tells h11 the peer closed
                body, finished = body_of(conn)
                before = stream.progress
                events = stream.feed(body)
                if stream.progress != before or events:
                    last_progress = time.monotonic()
                if end or finished:
                    events += stream.end()
            except h11.RemoteProtocolError as err:
                code = ErrorCode.STREAM_END_MISSING if end else ErrorCode.PROTOCOL_ERROR
                return Attempt(end or "error", CodecError(code, str(err), at_boundary=bool(end)))
            except CodecError as err:
                return Attempt("error", err)
            for event in events:
                if not payload.feed(event.data, event.kind):
                    return Attempt("error", payload.error)
                tally.accept(event.data)
            if finished and target.sse_body == "chunked":
                return Attempt("stream-end", None, finished=True)
            if finished or end:  # a close-delimited body ends with the connection
                cut = CodecError(ErrorCode.FRAME_TRUNCATED, "EOF inside an event")
                return Attempt("eof", cut if stream.in_event else None)


def read_within(
    sock: socket.socket, target: Target, stream: EventStream, last_progress: float
) -> tuple[bytes, str]:
    """One read; inside an event, within the incomplete-message timeout counted from the last
    byte that advanced it (a heartbeat comment keeps the read alive, not the event)."""
    if not stream.in_event:
        return read_some(sock, target, in_message=False)
    left = target.incomplete_message_timeout_s - (time.monotonic() - last_progress)
    if left <= 0:
        return b"", "timeout"
    sock.settimeout(left)
    try:
        data = sock.recv(READ_BYTES)
    except TimeoutError:
        return b"", "timeout"
    except ConnectionResetError:
        return b"", "rst"
    return data, "" if data else "eof"


def consume(target: Target, bug: str) -> ConsumerReport:
    tally, payload, stream = Tally(), PayloadLayer(target), EventStream(bug)
    continuing = target.producer_mode == "continue"
    attempt = Attempt()
    for number in range(target.max_reconnects + 1):
        if number:
            tally.close(attempt.end, "DISCARD_AND_RESET" if stream.in_event else "MESSAGE_COMPLETE")
            last_id = stream.last_id if continuing else ""
            stream = EventStream(bug, last_id=last_id)
            if not (continuing and last_id):  # the stream starts over: so does its result
                tally.accepted.clear()
                payload = PayloadLayer(target)
        attempt = read_attempt(target, stream, tally, payload)
        broken = attempt.end in ("rst", "timeout") or (
            attempt.end == "eof" and attempt.error is not None
        )
        done = payload.finished(attempt.end, attempt.error, None, stream.in_event)
        if not broken or done:
            break
    stream_end = StreamEnd(True) if attempt.finished else None
    return payload.conclude(
        tally, attempt.end, attempt.error, bytes(stream.line), stream_end, stream.in_event
    )


if __name__ == "__main__":
    chosen = sys.argv[1] if len(sys.argv) > 1 else "none"
    if chosen not in (*RULES, "none"):
        sys.exit(f"unknown rule {chosen!r}; one of: none, {', '.join(RULES)}")
    emit(consume(Target.from_env(), chosen))
