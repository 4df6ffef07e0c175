"""Parsing helpers the envelope consumers share (none of their bugs is here).

A frame that does not parse, or lacks a field, is a content error: seed 001's
``ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH``. Ending the stream (with any code, or verified) goes
through ``finish`` so that every envelope consumer reports the same way.
"""

from __future__ import annotations

import json
from typing import TypeVar

from reference_impl.errors import ErrorCode
from reference_impl.report import ConsumerReport
from tests.broken.contract import Tally

MISMATCH = ErrorCode.ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH.value
TRUNCATED = ErrorCode.ERR_ZPARQL_STREAM_TRUNCATED.value
VERIFIED = "RESULT_VERIFIED"

_T = TypeVar("_T")


class RejectedError(Exception):
    """The envelope is refused; ``code`` is one of seed 001's two error codes."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


def parse(data: bytes) -> dict[str, object]:
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError both are
        raise RejectedError(MISMATCH, f"frame does not parse: {err}") from None
    if not isinstance(value, dict):
        raise RejectedError(MISMATCH, "frame is not an object")
    return value


def field(frame: dict[str, object], key: str, kind: type[_T]) -> _T:
    value = frame.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RejectedError(MISMATCH, f"{key!r} missing or not a {kind.__name__}")
    return value


def record_ids(frame: dict[str, object]) -> list[bytes]:
    """The ids of a chunk's records, UTF-8 encoded."""
    ids: list[bytes] = []
    for record in field(frame, "records", list):
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise RejectedError(MISMATCH, "record without a string id")
        ids.append(record["id"].encode("utf-8", "surrogatepass"))
    return ids


def finish(tally: Tally, end: str, code: str | None, detail: str = "") -> ConsumerReport:
    """Close the connection and report: verified when ``code`` is None."""
    tally.close(end, "MESSAGE_COMPLETE" if code is None else "DISCARD_AND_RESET", code)
    if code is None:
        return tally.report(VERIFIED, True, detail=detail)
    return tally.report(code, False, code, detail=detail)
