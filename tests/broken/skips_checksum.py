"""Broken consumer: skips the checksum.

The bug: everything of seed 001 §4.1 is checked (header first, chunks 1..M in sequence, a
trailer with ``EOS_FINALIZED``, the record count) except rule 4: the SHA-256 of the received ids
is never compared with ``trailer.checksum``. A result whose ids were altered on the way, or a
trailer whose checksum was, passes as long as the count holds.

Speaks: every framing (reference codecs); payload envelope.
"""

from __future__ import annotations

from reference_impl.framing import FRAMING_NAMES
from reference_impl.payload.envelope import END_TOKEN
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
        self.trailer_seen = False
        self.sequence = 0
        self.records = 0

    def read(self, data: bytes) -> None:
        frame = parse(data)
        kind = frame.get("frame_type")
        if self.trailer_seen:
            raise RejectedError(MISMATCH, "frame after the trailer")
        if not self.header_seen:
            if kind != "header":
                raise RejectedError(MISMATCH, f"first frame is {kind!r}")
            self.header_seen = True
        elif kind == "chunk":
            sequence = field(frame, "sequence", int)
            if sequence != self.sequence + 1:
                raise RejectedError(MISMATCH, f"chunk {sequence} after {self.sequence}")
            self.sequence = sequence
            self.records += len(ids_of(frame))
        elif kind == "trailer":
            if frame.get("end_token") != END_TOKEN:
                raise RejectedError(TRUNCATED, "trailer without EOS_FINALIZED")
            if field(frame, "total_records", int) != self.records:
                raise RejectedError(MISMATCH, "record count differs from the trailer")
            # BUG: trailer["checksum"] is never compared with the ids received.
            self.trailer_seen = True
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
    if not envelope.trailer_seen:
        return finish(tally, reader.end, TRUNCATED, "ended before the trailer")
    return finish(tally, reader.end, None)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
