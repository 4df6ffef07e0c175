"""Broken consumer: takes the end of the connection for the end of the answer.

The bug: tokens are parsed right (every profile, reference token tracker), and a content error
still fails the stream, but when the connection ends, cleanly or not, the text so far is "the
answer": the completion signal and the length hint are never consulted. Seed 002's core
failure, "Partial Result Acceptance": stream termination is not stream completion.

Speaks: every framing (reference codecs); payload tokens.
"""

from __future__ import annotations

from reference_impl.errors import CodecError
from reference_impl.framing import FRAMING_NAMES
from reference_impl.payload.tokens import TokenTracker
from reference_impl.report import ConsumerReport
from tests.broken.contract import Tally, Target, connect, emit
from tests.broken.framed import FramedReader, broken_frame

FRAMINGS = FRAMING_NAMES
PAYLOADS = ("tokens",)
#: it reads through ``framed.FramedReader``, which makes the link\'s request
HONOURS = ("request",)


def consume(target: Target) -> ConsumerReport:
    tally, tracker = Tally(), TokenTracker(target.profile)
    with connect(target) as sock:
        reader = FramedReader(sock, target, tally)
        try:
            for message in reader.messages():
                tracker.feed(message)
                tally.accept(message.data)
        except CodecError as err:
            tally.close("error", "DISCARD_AND_RESET", err.code.value)
            return tally.report("PARTIAL_MID_TOKEN", False, err.code.value, detail=err.detail)
    if broken_frame(reader.error):
        assert reader.error is not None
        tally.close(reader.end, "DISCARD_AND_RESET", reader.error.code.value)
        return tally.report("PARTIAL_MID_TOKEN", False, reader.error.code.value)
    # BUG: tracker.completion_signal_present is never asked: a closed stream is a done stream.
    tally.close(reader.end, "MESSAGE_COMPLETE", None)
    return tally.report("COMPLETE_EXPLICIT", True, detail=f"{tracker.received_tokens} tokens")


if __name__ == "__main__":
    emit(consume(Target.from_env()))
