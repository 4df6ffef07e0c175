"""What one token-stream frame means to ``TokenTracker``, whatever the profile, and the helpers
every profile's reader shares (a frame as a JSON object, token text, error constructors).

A profile's reader is a callable from one whole ``Message`` to a ``Frame``; a reader that needs
state (sequence numbers, open content blocks) is an object made fresh for each stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message

FrameKind = Literal["token", "hint", "signal", "other", "fragment", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as it is handed on: only ever whole (its arguments complete, one JSON
    value), never a prefix of one."""

    id: str
    name: str
    #: the arguments' JSON text as the producer streamed it
    arguments: str


@dataclass(frozen=True, slots=True)
class Frame:
    """``token``: text the application sees; ``fragment``: a piece of a tool call's arguments
    (content, but nothing is handed on yet); ``tool``: a tool call now whole; ``hint``: the
    length hint; ``signal``: the completion signal; ``other``: everything else."""

    kind: FrameKind
    text: str = ""
    count: int | None = None  # the hint's N, or the generic signal's N
    call: ToolCall | None = None
    #: the signal's ``stream_completion_signal_receipt`` when the frame's data is too long to be
    #: one (a Responses ``response.completed`` repeats the whole output)
    receipt: str | None = None


OTHER = Frame("other")
SIGNAL = Frame("signal")
FRAGMENT = Frame("fragment")

Reader = Callable[[Message], Frame]


def malformed(detail: str) -> CodecError:
    return CodecError(ErrorCode.MALFORMED_PAYLOAD, detail, at_boundary=True)


def remote(detail: str) -> CodecError:
    """An in-band error event: the producer said, inside the stream, that it failed."""
    return CodecError(ErrorCode.REMOTE_ERROR, detail, at_boundary=True)


def truncated_by_length(detail: str) -> CodecError:
    """The producer ended the stream because it reached its output limit: a proper end, but
    not a complete answer."""
    return CodecError(ErrorCode.OUTPUT_TRUNCATED, detail, at_boundary=True)


def json_object(data: bytes) -> dict[str, object]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError(ErrorCode.INVALID_UTF8, "frame is not UTF-8", at_boundary=True) from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise malformed(f"frame is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise malformed("frame is not a JSON object")
    return value


def natural(value: object, what: str = "token count") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise malformed(f"{what} {value!r} is not a natural number")
    return value


def unicode_text(value: object, what: str = "token text") -> str:
    """A JSON string that is real Unicode (a lone surrogate smuggled in as ``\\ud800`` is not)."""
    if not isinstance(value, str):
        raise malformed(f"{what} is not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise CodecError(
            ErrorCode.INVALID_UTF8, f"{what} is not Unicode", at_boundary=True
        ) from None
    return value


def token(value: object) -> Frame:
    text = unicode_text(value)
    return Frame("token", text) if text else OTHER


def typed(message: Message, frame: dict[str, object]) -> str:
    """The frame's ``type``, checked against the SSE ``event:`` line when there is one."""
    kind = frame.get("type")
    if not isinstance(kind, str):
        raise malformed("frame without a string type")
    if message.kind and message.kind != kind:
        raise malformed(f"event {message.kind!r} carries type {kind!r}")
    return kind


def whole_json(arguments: str, what: str) -> None:
    """A tool call's arguments must be one whole JSON value before the call is handed on."""
    try:
        json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        raise malformed(f"{what} arguments are not whole JSON: {exc}") from None


def fragments(text: str, size: int = 7) -> list[str]:
    """``text`` in pieces of ``size`` characters, as models stream a tool call's arguments."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def encode(frame: dict[str, object], kind: str = "") -> Message:
    """One frame as compact UTF-8 JSON (multi-byte characters raw, so cuts land inside them)."""
    data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Message(data, kind)


def event(frame: dict[str, object]) -> Message:
    """A frame whose ``type`` also names its SSE event."""
    return encode(frame, str(frame["type"]))
