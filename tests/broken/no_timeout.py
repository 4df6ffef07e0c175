"""Broken consumer: never times out a partial message.

The bug: the socket has no read timeout, so a producer (or a path) that goes quiet in the middle
of a message is waited for as long as it takes. Seed 000's ``incomplete_message_timeout`` exists
to turn that wait into a verdict (``STALE_PARTIAL_BUFFER``); without it the consumer either hangs
until it is killed, or, when the bytes finally come after the timeout, accepts a message whose
partial buffer was already stale. The framing (reference codecs) and the payload layer are right.

Speaks: every framing; every payload.
"""

from __future__ import annotations

from reference_impl.framing import FRAMING_NAMES
from reference_impl.report import ConsumerReport
from tests.broken.contract import ALL_PAYLOADS, Tally, Target, connect, emit
from tests.broken.framed import FramedReader
from tests.broken.payload import PayloadLayer

FRAMINGS = FRAMING_NAMES
PAYLOADS = ALL_PAYLOADS
#: it reads through ``framed.FramedReader``, which makes the link\'s request
HONOURS = ("request",)


class PatientReader(FramedReader):
    def timeout_s(self) -> float | None:
        return None  # BUG: TEARLINE_INCOMPLETE_MESSAGE_TIMEOUT_MS is never applied


def consume(target: Target) -> ConsumerReport:
    tally, payload = Tally(), PayloadLayer(target)
    with connect(target) as sock:
        reader = PatientReader(sock, target, tally)
        for message in reader.messages():
            if not payload.feed(message.data, message.kind):
                return payload.conclude(tally, "error", None)
            tally.accept(message.data)
    return payload.conclude(
        tally, reader.end, reader.error, reader.partial, reader.stream_end, reader.in_message
    )


if __name__ == "__main__":
    emit(consume(Target.from_env()))
