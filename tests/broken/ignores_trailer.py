"""Broken consumer: ignores the trailer.

The bug: the envelope is read frame by frame, header first, chunks in sequence, and a trailer is
checked when one comes (end token, count, checksum), but nothing requires that one comes. The
loop ends when the stream ends, and the records collected so far are the result. A stream cut
between chunks, or one that lost its trailer, reads as a shorter valid result (seed 001 §4.2: a
stream that "closes prematurely, or omits the EOS_FINALIZED trailer" must fail closed).

Speaks: every framing (reference codecs); payload envelope.
"""

from __future__ import annotations

from reference_impl.framing import FRAMING_NAMES
from reference_impl.payload.envelope import END_TOKEN, IdDigest
from reference_impl.report import ConsumerReport
from tests.broken.contract import Tally, Target, connect, emit
from tests.broken.envelope_frames import (
    MISMATCH,
    TRUNCATED,
    RejectedError,
    field,
    finish,
    parse,
)
from tests.broken.envelope_frames import record_ids as ids_of
from tests.broken.framed import FramedReader, broken_frame

FRAMINGS = FRAMING_NAMES
PAYLOADS = ("envelope",)
#: it reads through ``framed.FramedReader``, which makes the link\'s request
HONOURS = ("request",)


class Envelope:
    def __init__(self) -> None:
        self.header_seen = False
        self.sequence = 0
        self.ids = IdDigest()

    def read(self, data: bytes) -> None:
        frame = parse(data)
        kind = frame.get("frame_type")
        if not self.header_seen:
            if kind != "header":
                raise RejectedError(MISMATCH, f"first frame is {kind!r}")
            self.header_seen = True
        elif kind == "chunk":
            sequence = field(frame, "sequence", int)
            if sequence != self.sequence + 1:
                raise RejectedError(MISMATCH, f"chunk {sequence} after {self.sequence}")
            self.sequence = sequence
            for record_id in ids_of(frame):
                self.ids.add(record_id)
        elif kind == "trailer":
            if frame.get("end_token") != END_TOKEN:
                raise RejectedError(TRUNCATED, "trailer without EOS_FINALIZED")
            if field(frame, "total_records", int) != self.ids.count:
                raise RejectedError(MISMATCH, "record count differs from the trailer")
            if field(frame, "checksum", str) != self.ids.checksum:
                raise RejectedError(MISMATCH, "checksum differs from the trailer")
        else:
            raise RejectedError(MISMATCH, f"unexpected frame {kind!r}")


def consume(target: Target) -> ConsumerReport:
    tally, envelope = Tally(), Envelope()
    with connect(target) as sock:
        reader = FramedReader(sock, target, tally)
        try:
            for message in reader.messages():
                envelope.read(message.data)
                tally.accept(message.data)
        except RejectedError as err:
            return finish(tally, "error", err.code, str(err))
    if broken_frame(reader.error):
        return finish(tally, reader.end, MISMATCH, "a frame does not parse")
    # BUG: the stream is over, so the result must be complete; whether a trailer came (or the
    # transport broke off: reader.error) is never asked.
    return finish(tally, reader.end, None)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
