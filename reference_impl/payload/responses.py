"""The ``openai-responses`` token profile: OpenAI's Responses API stream (typed SSE events).

Every frame is a JSON object whose ``type`` is also its SSE ``event:`` line and which carries a
``sequence_number`` (0, 1, 2, ... with no gap, duplicate or reordering). The producer streams::

    response.created [hint in it] response.in_progress
    output item 0, a message:  output_item.added content_part.added
                               output_text.delta* output_text.done content_part.done
                               output_item.done
    output items 1..tools, function calls:  output_item.added
                               function_call_arguments.delta* function_call_arguments.done
                               output_item.done
    response.completed | response.incomplete (length_limited)

Deltas (text and arguments) carry an ``obfuscation`` field: random-looking padding drawn from
the spec's seed, which a comparison of messages ignores (``comparable``). The length hint, when
advertised, is a ``tearline_expected_tokens`` key of ``response.created``.

``ResponsesReader`` checks a stream frame by frame and fails closed: a sequence number out of
turn -> ``SEQUENCE_BROKEN``; ``response.failed`` or ``error`` -> ``REMOTE_ERROR`` (an in-band
error after HTTP 200); ``response.incomplete`` for ``max_output_tokens`` -> ``OUTPUT_TRUNCATED``;
a delta for an item that is not open, a ``.done`` whose text or arguments differ from the
deltas, arguments that are not whole JSON, an event before ``response.created`` or after the
end -> ``MALFORMED_PAYLOAD``. Event types it does not know (reasoning, web search, ...) are
tolerated, as the SDKs tolerate them, but still numbered. A function call is handed on
(``Frame("tool")``) only at its ``output_item.done``, its arguments whole and verified.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.payload import token_frames as tf
from reference_impl.payload.token_frames import Frame, ToolCall

if TYPE_CHECKING:
    from reference_impl.payload.tokens import TokenStreamSpec

PROFILE: Final = "openai-responses"
HINT_KEY: Final = "tearline_expected_tokens"
RESPONSE_ID: Final = "resp_tearline"
MESSAGE_ID: Final = "msg_tearline"
MODEL: Final = "tearline-1"
TERMINAL: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_OBFUSCATION_ALPHABET = string.ascii_letters + string.digits


def tool_arguments(index: int) -> str:
    """Tool call ``index``'s arguments: JSON with multi-byte text, so cuts land inside both a
    JSON value and a character."""
    args = {"query": f"naïve 流式 🚀 #{index}", "limit": index + 3, "exact": index % 2 == 0}
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def comparable(data: bytes) -> bytes:
    """A frame as a comparison of messages sees it: without its ``obfuscation`` field, which
    is random padding by design (two runs of the same stream differ only there)."""
    try:
        frame = json.loads(data)
    except ValueError:
        return data
    if not isinstance(frame, dict) or "obfuscation" not in frame:
        return data
    del frame["obfuscation"]
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --- producer ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Numbered:
    """Numbers the events and draws the obfuscation padding from one seeded generator."""

    rng: random.Random
    next: int = 0

    def __call__(self, frame: dict[str, object]) -> Message:
        frame["sequence_number"] = self.next
        self.next += 1
        return tf.event(frame)

    def obfuscation(self) -> str:
        size = self.rng.randint(1, 16)
        return "".join(self.rng.choice(_OBFUSCATION_ALPHABET) for _ in range(size))


def _response(status: str, output: list[object], **extra: object) -> dict[str, object]:
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        **extra,
    }


def _message_events(
    emit: _Numbered, text_tokens: tuple[str, ...], status: str
) -> Iterator[Message]:
    item: dict[str, object] = {
        "id": MESSAGE_ID,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    where: dict[str, object] = {"item_id": MESSAGE_ID, "output_index": 0, "content_index": 0}
    yield emit({"type": "response.output_item.added", "output_index": 0, "item": item})
    part: dict[str, object] = {"type": "output_text", "text": "", "annotations": []}
    yield emit({"type": "response.content_part.added", **where, "part": part})
    for text in text_tokens:
        delta = {"delta": text, "logprobs": [], "obfuscation": emit.obfuscation()}
        yield emit({"type": "response.output_text.delta", **where, **delta})
    whole = "".join(text_tokens)
    yield emit({"type": "response.output_text.done", **where, "text": whole, "logprobs": []})
    done_part = {**part, "text": whole}
    yield emit({"type": "response.content_part.done", **where, "part": done_part})
    finished = {**item, "status": status, "content": [done_part]}
    yield emit({"type": "response.output_item.done", "output_index": 0, "item": finished})


def _call_item(index: int, arguments: str, status: str) -> dict[str, object]:
    return {
        "id": f"fc_tearline_{index}",
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": f"call_tearline_{index}",
        "name": f"tearline_tool_{index}",
    }


def _call_events(emit: _Numbered, index: int, output_index: int) -> Iterator[Message]:
    arguments = tool_arguments(index)
    where: dict[str, object] = {"item_id": f"fc_tearline_{index}", "output_index": output_index}
    added = _call_item(index, "", "in_progress")
    yield emit({"type": "response.output_item.added", "output_index": output_index, "item": added})
    for piece in tf.fragments(arguments):
        delta = {"delta": piece, "obfuscation": emit.obfuscation()}
        yield emit({"type": "response.function_call_arguments.delta", **where, **delta})
    done = {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    yield emit({**done, "name": added["name"]})
    item = _call_item(index, arguments, "completed")
    yield emit({"type": "response.output_item.done", "output_index": output_index, "item": item})


def iter_messages(spec: TokenStreamSpec) -> Iterator[Message]:
    """Every frame of the stream, lazily."""
    emit = _Numbered(random.Random(f"{spec.seed}:obfuscation"))
    created: dict[str, object] = {
        "type": "response.created",
        "response": _response("in_progress", []),
    }
    if spec.advertise_length:
        created[HINT_KEY] = len(spec.tokens)
    yield emit(created)
    yield emit({"type": "response.in_progress", "response": _response("in_progress", [])})
    status = "incomplete" if spec.length_limited else "completed"
    yield from _message_events(emit, spec.tokens, status)
    whole = "".join(spec.tokens)
    output: list[object] = [
        {
            "id": MESSAGE_ID,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": [{"type": "output_text", "text": whole, "annotations": []}],
        }
    ]
    if not spec.length_limited:  # a model cut at its limit calls no more tools
        for index in range(spec.tools):
            yield from _call_events(emit, index, index + 1)
            output.append(_call_item(index, tool_arguments(index), "completed"))
    if not spec.send_completion:
        return
    usage = {
        "input_tokens": 1,
        "output_tokens": len(spec.tokens),
        "total_tokens": 1 + len(spec.tokens),
    }
    if spec.length_limited:
        details = {"reason": "max_output_tokens"}
        response = _response("incomplete", output, incomplete_details=details, usage=usage)
        yield emit({"type": "response.incomplete", "response": response})
    else:
        yield emit(
            {"type": "response.completed", "response": _response("completed", output, usage=usage)}
        )


# --- consumer side ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """An open output item: a message's text so far, or a function call's arguments so far."""

    type: str
    id: str
    buffer: list[str] = field(default_factory=list)
    name: str = ""
    call_id: str = ""
    closed_arguments: bool = False

    @property
    def content(self) -> str:
        return "".join(self.buffer)


def _str(frame: dict[str, object], key: str) -> str:
    return tf.unicode_text(frame.get(key), key)


def _index(frame: dict[str, object], key: str = "output_index") -> int:
    return tf.natural(frame.get(key), key)


def _dict(frame: dict[str, object], key: str) -> dict[str, object]:
    value = frame.get(key)
    if not isinstance(value, dict):
        raise tf.malformed(f"{key} is not an object")
    return value


def _error_text(value: object) -> str:
    if isinstance(value, dict):
        code, message = value.get("code") or value.get("type"), value.get("message")
        return f"{code}: {message}"
    return str(value)


class ResponsesReader:
    """Reads one Responses stream; see the module docstring. One reader per stream."""

    def __init__(self) -> None:
        self._next = 0
        self._started = False
        self._items: dict[int, _Item] = {}

    def __call__(self, message: Message) -> Frame:
        frame = tf.json_object(message.data)
        kind = tf.typed(message, frame)
        self._number(frame)
        if kind == "error":  # an in-band error event: it has no response
            raise tf.remote(f"error event: {_error_text(frame)}")
        if not self._started:
            if kind != "response.created":
                raise tf.malformed(f"{kind!r} before response.created")
            self._started = True
            hint = frame.get(HINT_KEY)
            return tf.OTHER if hint is None else Frame("hint", count=tf.natural(hint))
        if kind in TERMINAL:
            return self._terminal(kind, frame)
        handler = _HANDLERS.get(kind)
        return tf.OTHER if handler is None else handler(self, frame)

    def _number(self, frame: dict[str, object]) -> None:
        number = frame.get("sequence_number")
        if not isinstance(number, int) or isinstance(number, bool):
            raise tf.malformed("event without an integer sequence_number")
        if number != self._next:
            what = "duplicate or reordered" if number < self._next else "gap or reordered"
            raise CodecError(
                ErrorCode.SEQUENCE_BROKEN,
                f"sequence_number {number} where {self._next} was due ({what})",
                at_boundary=True,
            )
        self._next += 1

    def _terminal(self, kind: str, frame: dict[str, object]) -> Frame:
        response = _dict(frame, "response")
        if kind == "response.failed":
            raise tf.remote(f"response.failed: {_error_text(response.get('error'))}")
        if kind == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            if reason == "max_output_tokens":
                raise tf.truncated_by_length("response.incomplete: max_output_tokens")
            raise tf.remote(f"response.incomplete: {reason}")
        if open_items := sorted(self._items):
            raise tf.malformed(f"response.completed with output items {open_items} still open")
        receipt = f"{PROFILE}: response.completed (sequence_number {self._next - 1})"
        return Frame("signal", receipt=receipt)

    def _added(self, frame: dict[str, object]) -> Frame:
        index, item = _index(frame), _dict(frame, "item")
        if index in self._items:
            raise tf.malformed(f"output item {index} added twice")
        kind = item.get("type")
        self._items[index] = _Item(
            type=kind if isinstance(kind, str) else "",
            id=str(item.get("id", "")),
            name=str(item.get("name", "")),
            call_id=str(item.get("call_id", "")),
        )
        return tf.OTHER

    def _open(self, frame: dict[str, object], kind: str) -> _Item:
        index = _index(frame)
        item = self._items.get(index)
        if item is None or item.type != kind:
            raise tf.malformed(f"event for output item {index}, which is no open {kind}")
        return item

    def _text_delta(self, frame: dict[str, object]) -> Frame:
        item = self._open(frame, "message")
        text = _str(frame, "delta")
        item.buffer.append(text)
        return tf.token(text)

    def _text_done(self, frame: dict[str, object]) -> Frame:
        item = self._open(frame, "message")
        if _str(frame, "text") != item.content:
            raise tf.malformed("output_text.done differs from the text its deltas carried")
        return tf.OTHER

    def _arguments_delta(self, frame: dict[str, object]) -> Frame:
        item = self._open(frame, "function_call")
        if item.closed_arguments:
            raise tf.malformed("arguments delta after function_call_arguments.done")
        item.buffer.append(_str(frame, "delta"))
        return tf.FRAGMENT

    def _arguments_done(self, frame: dict[str, object]) -> Frame:
        item = self._open(frame, "function_call")
        if _str(frame, "arguments") != item.content:
            raise tf.malformed("function_call_arguments.done differs from its deltas")
        tf.whole_json(item.content, f"function call {item.name!r}")
        item.closed_arguments = True
        return tf.OTHER

    def _item_done(self, frame: dict[str, object]) -> Frame:
        index = _index(frame)
        item = self._items.pop(index, None)
        if item is None:
            raise tf.malformed(f"output_item.done for output item {index}, which is not open")
        if item.type != "function_call":
            return tf.OTHER
        done = _dict(frame, "item")
        if not item.closed_arguments or done.get("arguments") != item.content:
            raise tf.malformed(f"function call {item.name!r} done without its whole arguments")
        return Frame("tool", call=ToolCall(item.call_id, item.name, item.content))


_HANDLERS = {
    "response.output_item.added": ResponsesReader._added,
    "response.output_text.delta": ResponsesReader._text_delta,
    "response.output_text.done": ResponsesReader._text_done,
    "response.function_call_arguments.delta": ResponsesReader._arguments_delta,
    "response.function_call_arguments.done": ResponsesReader._arguments_done,
    "response.output_item.done": ResponsesReader._item_done,
}
