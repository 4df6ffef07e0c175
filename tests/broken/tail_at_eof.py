"""Broken consumer: accepts whatever it has at the end of the stream.

The bug: when the connection ends, the bytes still buffered are handed on as the last message,
the way ``requests.iter_lines`` and asyncio's ``readline()`` return an unterminated last line,
and a short ``read(count)`` at EOF is used as the value (failure catalogue, cases 53 and 57).
The framing is otherwise right: whole lines and whole bodies are split correctly.

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


def leftover(buffer: bytearray, framing: str) -> bytes:
    """BUG: what is left at the end is the last message (header bytes dropped)."""
    return bytes(buffer) if framing == "ndjson" else bytes(buffer[4:])


def consume(target: Target) -> ConsumerReport:
    tally, payload = Tally(), PayloadLayer(target)
    buffer = bytearray()
    with connect(target) as sock:
        while True:
            data, end = read_some(sock, target, in_message=bool(buffer))
            if end:
                break
            tally.received(data)
            buffer += data
            try:
                messages = take_messages(buffer, target.framing)
            except CodecError as err:
                return payload.conclude(tally, "error", err, bytes(buffer))
            for message in messages:
                if not payload.feed(message):
                    return payload.conclude(tally, "error", None)
                tally.accept(message)
    tail = leftover(buffer, target.framing)
    if tail and payload.feed(tail):
        tally.accept(tail)
    return payload.conclude(tally, end, transport_error(end, in_message=False))


if __name__ == "__main__":
    emit(consume(Target.from_env()))
