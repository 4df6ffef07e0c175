"""Broken consumer: ignores sequence numbers.

The bug: records are streamed on to the application chunk by chunk as they arrive, and the
envelope is verified at the end against the trailer (end token, count, checksum), but the
``sequence`` of each chunk is never looked at. A duplicated or reordered chunk is handed on
before the trailer can object; the final verdict may even be right, but the application has
already consumed records twice or out of order (seed 001 §4.1 rule 1; catalogue case 34).

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
        self.trailer_seen = False
        self.ids = IdDigest()

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
            # BUG: frame["sequence"] is not checked; the records go on as they come.
            for record_id in ids_of(frame):
                self.ids.add(record_id)
        elif kind == "trailer":
            if frame.get("end_token") != END_TOKEN:
                raise RejectedError(TRUNCATED, "trailer without EOS_FINALIZED")
            if field(frame, "total_records", int) != self.ids.count:
                raise RejectedError(MISMATCH, "record count differs from the trailer")
            if field(frame, "checksum", str) != self.ids.checksum:
                raise RejectedError(MISMATCH, "checksum differs from the trailer")
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
