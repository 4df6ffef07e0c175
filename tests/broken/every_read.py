"""Broken consumer: treats every read as a message.

The bug: one ``recv()`` is taken to be one message, as if TCP kept the producer's write
boundaries. On ndjson each read, minus its final LF, is "the line"; on length-prefixed the first
four bytes of each read are "the" prefix and the rest is "the" body. A relay merges back-to-back
writes and a split fault tears one, so this hands on fused and torn messages (seed 000, message
merging and message splitting). It never believes it is in the middle of a message.

Speaks: ndjson, length-prefixed; every payload (the reference payload layer judges the rest).
"""

from __future__ import annotations

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

FRAMINGS = ("ndjson", "length-prefixed")
PAYLOADS = ALL_PAYLOADS


def message_of(read: bytes, framing: str) -> bytes:
    """BUG: the whole read is the message."""
    if framing == "ndjson":
        return read.removesuffix(b"\n")
    return read[4:]


def consume(target: Target) -> ConsumerReport:
    tally, payload = Tally(), PayloadLayer(target)
    with connect(target) as sock:
        while True:
            data, end = read_some(sock, target, in_message=False)
            if end:
                return payload.conclude(tally, end, transport_error(end, in_message=False))
            tally.received(data)
            message = message_of(data, target.framing)
            if not payload.feed(message):
                return payload.conclude(tally, "error", None)
            tally.accept(message)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
