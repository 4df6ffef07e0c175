"""Broken consumer: repairs invalid UTF-8 silently.

The bug: each read is decoded on its own with ``errors="replace"`` and the text is split into
lines. A multi-byte character torn across two reads becomes two U+FFFD, and bytes that are not
UTF-8 at all become U+FFFD too: the consumer hands on text the producer never sent, and never
says so (seed 002, "mid-token cutting ... which the agent silently repairs"; design decision 4:
invalid UTF-8 is never repaired silently). Lines, CR and blank lines are otherwise handled
right, and a line cut by the end of the stream is not handed on.

Speaks: ndjson; every payload.
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

FRAMINGS = ("ndjson",)
PAYLOADS = ALL_PAYLOADS


def consume(target: Target) -> ConsumerReport:
    tally, payload = Tally(), PayloadLayer(target)
    text = ""
    with connect(target) as sock:
        while True:
            data, end = read_some(sock, target, in_message=bool(text))
            if end:
                break
            tally.received(data)
            text += data.decode("utf-8", errors="replace")  # BUG: per read, and repaired
            *lines, text = text.split("\n")
            for line in lines:
                message = line.removesuffix("\r").encode("utf-8")
                if not message:
                    continue
                if not payload.feed(message):
                    return payload.conclude(tally, "error", None)
                tally.accept(message)
    partial = text.encode("utf-8")
    return payload.conclude(tally, end, transport_error(end, bool(partial)), partial)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
