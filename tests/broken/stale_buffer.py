"""Broken consumer: keeps a stale partial buffer across a reconnect.

The bug: when a connection breaks (FIN inside a message, RST, timeout) the consumer reconnects,
as it should, but keeps its read buffer: the partial message of the dead connection is completed
with the first bytes of the new one. That is seed 000's third failure mode ("a new message
concatenates with the stale partial") and catalogue cases 31 and 58; on length-prefixed it also
desynchronises every frame after it. Everything else is right: the framing splits correctly, a
new connection gets a fresh payload layer (the producer restarts the stream by default).

Speaks: ndjson, length-prefixed; every payload.
"""

from __future__ import annotations

from reference_impl.errors import CodecError
from reference_impl.report import ConsumerReport
from tests.broken.contract import (
    ALL_PAYLOADS,
    Tally,
    Target,
    connect,
    emit,
    read_some,
    transport_error,
)
from tests.broken.payload import PayloadLayer
from tests.broken.splitter import SOCKET_FRAMINGS, take_messages

FRAMINGS = SOCKET_FRAMINGS
PAYLOADS = ALL_PAYLOADS
MAX_RECONNECTS = 2


class RefusedError(Exception):
    """The framing or the payload refused the stream: no reconnect will help."""

    def __init__(self, error: CodecError | None) -> None:
        super().__init__()
        self.error = error


def read_connection(target: Target, tally: Tally, payload: PayloadLayer, buffer: bytearray) -> str:
    """Read one connection into ``buffer``, handing on whole messages; how it ended."""
    with connect(target) as sock:
        while True:
            data, end = read_some(sock, target, in_message=bool(buffer))
            if end:
                return end
            tally.received(data)
            buffer += data
            try:
                messages = take_messages(buffer, target.framing)
            except CodecError as err:
                raise RefusedError(err) from None
            for message in messages:
                if not payload.feed(message):
                    raise RefusedError(None)
                tally.accept(message)


def consume(target: Target) -> ConsumerReport:
    tally, buffer = Tally(), bytearray()
    for attempt in range(MAX_RECONNECTS + 1):
        payload = PayloadLayer(target)
        try:
            end = read_connection(target, tally, payload, buffer)
        except RefusedError as refused:
            return payload.conclude(tally, "error", refused.error, bytes(buffer))
        broken = end != "eof" or bool(buffer)
        if not broken or attempt == MAX_RECONNECTS:
            break
        lost = transport_error(end, in_message=True)
        tally.close(end, "MESSAGE_IN_PROGRESS", lost.code.value if lost else None)
        # BUG: ``buffer`` survives the reconnect; it should be cleared here (DISCARD_AND_RESET).
    error = transport_error(end, in_message=bool(buffer))
    return payload.conclude(tally, end, error, bytes(buffer))


if __name__ == "__main__":
    emit(consume(Target.from_env()))
