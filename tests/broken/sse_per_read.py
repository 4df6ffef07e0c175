"""Broken consumer: parses each SSE read on its own.

The bug: HTTP is done right (h11 takes the chunked body apart), but the event-stream body is
parsed one read at a time: every ``data:`` line in the bytes of this read is a message, also
the last one when the read ended in the middle of it, and a line that began in the previous
read has lost its ``data:`` prefix, so its rest is ignored. The pattern of
``for line in chunk.splitlines()`` over ``iter_content()`` (failure catalogue, section A: an
event is dispatched only at a blank line, whatever the reads).

Speaks: sse (h11); every payload.
"""

from __future__ import annotations

import h11

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import StreamEnd
from reference_impl.report import ConsumerReport
from tests.broken.contract import (
    ALL_PAYLOADS,
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
REQUEST = h11.Request(
    method="GET",
    target="/stream",
    headers=[("Host", "127.0.0.1"), ("Accept", "text/event-stream")],
)


def body_of(conn: h11.Connection) -> tuple[bytes, bool]:
    """The body bytes h11 has for us now, and whether the response ended."""
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


def data_lines(body: bytes) -> list[bytes]:
    """BUG: the ``data:`` lines of one read, as if the read held whole events."""
    return [line[5:].removeprefix(b" ") for line in body.split(b"\n") if line.startswith(b"data:")]


def consume(target: Target) -> ConsumerReport:
    tally, payload, conn = Tally(), PayloadLayer(target), h11.Connection(h11.CLIENT)
    with connect(target) as sock:
        send(sock, conn.send(REQUEST) + conn.send(h11.EndOfMessage()))
        while True:
            data, end = read_some(sock, target, in_message=False)
            if end in ("rst", "timeout"):
                return payload.conclude(tally, end, transport_error(end, in_message=False))
            tally.received(data)
            try:
                conn.receive_data(data)  # b"" tells h11 the peer closed
                body, finished = body_of(conn)
            except h11.RemoteProtocolError as err:
                code = ErrorCode.STREAM_END_MISSING if end else ErrorCode.PROTOCOL_ERROR
                error = CodecError(code, str(err), at_boundary=bool(end))
                return payload.conclude(tally, end or "error", error)
            except CodecError as err:
                return payload.conclude(tally, "error", err)
            for message in data_lines(body):
                if not payload.feed(message):
                    return payload.conclude(tally, "error", None)
                tally.accept(message)
            if finished:  # a close-delimited body ends at EOF, which proves nothing
                explicit = None if end else StreamEnd(True)
                return payload.conclude(tally, end or "stream-end", None, stream_end=explicit)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
