"""Broken consumer: trusts any declared length.

The bug: the u32 length prefix is believed whatever it says; there is no maximum message size.
A bogus prefix of 4 GiB makes the consumer wait for (and buffer) a body that will never come,
where it should refuse the frame as soon as the four prefix bytes are in (failure catalogue,
cases 41 and 57: "check the declared length against a maximum before allocating"). It still
fails closed in the end, at EOF, but for the wrong reason and only after the whole stream.

Speaks: length-prefixed; every payload.
"""

from __future__ import annotations

import struct

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

FRAMINGS = ("length-prefixed",)
PAYLOADS = ALL_PAYLOADS
#: it is told the limit (the bug is that it never applies it), so the cases that set one are its
HONOURS = ("max_message_bytes",)


def take_messages(buffer: bytearray) -> list[bytes]:
    """Every whole message at the front of ``buffer``, removed from it."""
    out: list[bytes] = []
    while len(buffer) >= 4:
        (size,) = struct.unpack_from(">I", buffer)  # BUG: no upper bound on ``size``
        if len(buffer) < 4 + size:
            break
        out.append(bytes(buffer[4 : 4 + size]))
        del buffer[: 4 + size]
    return out


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
            for message in take_messages(buffer):
                if not payload.feed(message):
                    return payload.conclude(tally, "error", None)
                tally.accept(message)
    error = transport_error(end, in_message=bool(buffer))
    return payload.conclude(tally, end, error, bytes(buffer[4:]), in_message=bool(buffer))


if __name__ == "__main__":
    emit(consume(Target.from_env()))
