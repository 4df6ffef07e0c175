"""Broken consumer: splits NDJSON with ``str.splitlines``.

The bug: lines are split with Python's ``str.splitlines()``, which breaks not only at LF but at
CR, VT, FF, the file/group/record separators, NEL (U+0085) and U+2028/U+2029. A message holding
one of those characters (legal inside any message, and inside JSON strings) is cut in two
(failure catalogue, cases 5 and 54: "split records on \\n only"). Decoding is right (an
incremental decoder, strict), and a line cut by the end of the stream is not handed on.

Speaks: ndjson; every payload.
"""

from __future__ import annotations

import codecs

from reference_impl.errors import CodecError, ErrorCode
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


def whole_lines(text: str) -> tuple[list[str], str]:
    """The whole lines in ``text`` and the unterminated rest."""
    lines = text.splitlines()  # BUG: not only at "\\n"
    if text.endswith("\n") or not lines:
        return lines, ""
    return lines[:-1], lines[-1]


def consume(target: Target) -> ConsumerReport:
    tally, payload = Tally(), PayloadLayer(target)
    decoder = codecs.getincrementaldecoder("utf-8")()
    text = ""
    with connect(target) as sock:
        while True:
            data, end = read_some(sock, target, in_message=bool(text))
            if end:
                break
            tally.received(data)
            try:
                text += decoder.decode(data)
            except UnicodeDecodeError:
                error = CodecError(ErrorCode.INVALID_UTF8, "line is not UTF-8")
                return payload.conclude(tally, "error", error, text.encode())
            lines, text = whole_lines(text)
            for message in (line.encode("utf-8") for line in lines if line):
                if not payload.feed(message):
                    return payload.conclude(tally, "error", None)
                tally.accept(message)
    partial = text.encode("utf-8")
    return payload.conclude(tally, end, transport_error(end, bool(partial)), partial)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
