"""Broken consumer: takes each WebSocket data event for a whole message.

The bug: wsproto hands out a text or binary message in pieces, one event per frame or per part
of a frame that arrived (``message_finished`` says when the message ends; its documentation
says "you need to buffer and reassemble these chunks"). This consumer hands each piece on as a
message. A fragmented message, or one frame split across two reads, becomes several messages
(seed 000, message splitting: "the receiver treats each frame as a separate message").

Speaks: websocket (wsproto); every payload.
"""

from __future__ import annotations

import socket

from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

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

FRAMINGS = ("websocket",)
INVALID_DATA = 1007  # RFC 6455 close code: a text message that is not UTF-8
PAYLOADS = ALL_PAYLOADS


class Session:
    def __init__(self, sock: socket.socket, target: Target) -> None:
        self.sock, self.ws = sock, WSConnection(ConnectionType.CLIENT)
        self.tally, self.payload = Tally(), PayloadLayer(target)
        self.report: ConsumerReport | None = None

    def handle(self, event: Event) -> None:
        if isinstance(event, TextMessage | BytesMessage):
            # BUG: ``event.message_finished`` is ignored: every piece is a whole message.
            data = event.data.encode("utf-8") if isinstance(event.data, str) else event.data
            if not self.payload.feed(bytes(data)):
                self.report = self.payload.conclude(self.tally, "error", None)
            else:
                self.tally.accept(bytes(data))
        elif isinstance(event, Ping):
            send(self.sock, self.ws.send(event.response()))
        elif isinstance(event, CloseConnection) and self.ws.state is ConnectionState.OPEN:
            # wsproto refused a frame (bad UTF-8, bad opcode) and tells us with a close event.
            # We hang up instead of sending that close: a close frame in the middle of the
            # stream crashes the reference producer (reported; see tests/broken/README.md).
            code = (
                ErrorCode.INVALID_UTF8 if event.code == INVALID_DATA else ErrorCode.PROTOCOL_ERROR
            )
            error = CodecError(code, f"close {event.code}: {event.reason}")
            self.report = self.payload.conclude(self.tally, "error", error)
        elif isinstance(event, CloseConnection):
            send(self.sock, self.ws.send(event.response()))
            end = StreamEnd(event.code == 1000, f"close {event.code}")
            self.report = self.payload.conclude(self.tally, "stream-end", None, stream_end=end)
        elif isinstance(event, RejectConnection):
            error = CodecError(ErrorCode.PROTOCOL_ERROR, f"status {event.status_code}")
            self.report = self.payload.conclude(self.tally, "error", error)


def consume(target: Target) -> ConsumerReport:
    with connect(target) as sock:
        session = Session(sock, target)
        send(sock, session.ws.send(Request(host="127.0.0.1", target="/stream")))
        while session.report is None:
            data, end = read_some(sock, target, in_message=False)
            if end:
                error = transport_error(end, in_message=False) or CodecError(
                    ErrorCode.STREAM_END_MISSING, "EOF without a close frame", at_boundary=True
                )
                return session.payload.conclude(session.tally, end, error)
            session.tally.received(data)
            session.ws.receive_data(data)
            for event in session.ws.events():
                session.handle(event)
                if session.report is not None:
                    break
        return session.report


if __name__ == "__main__":
    emit(consume(Target.from_env()))
