"""The ``anthropic`` token profile: Anthropic's Messages stream, typed events by content block.

The default stream is one text block (the shape the library's scenarios pin)::

    message_start [ping: hint] content_block_start(0, text) content_block_delta(text_delta)*
    content_block_stop message_delta(stop_reason end_turn) message_stop

Settings add the richer shapes of an agent's turn: ``thinking`` puts a thinking block first
(``thinking_delta`` pieces, then a ``signature_delta``); ``tools: N`` adds N ``tool_use`` blocks
after the text, each input streamed as ``input_json_delta`` fragments, and the stop reason
``tool_use``; ``length_limited`` ends with the stop reason ``max_tokens``. Either richer shape
also sends a ``ping`` inside the first block, as the API does (pings may come anywhere).

``AnthropicReader`` keeps the open blocks by index and fails closed: a delta for a block that is
not open or of another kind, a block started twice or stopped unopened, a tool's input that is
not whole JSON at its ``content_block_stop``, an unknown event type -> ``MALFORMED_PAYLOAD``; an
``error`` event (``overloaded_error``, any time after the 200) -> ``REMOTE_ERROR``; the stop
reason ``max_tokens`` -> ``OUTPUT_TRUNCATED``. A ``tool_use`` call is handed on
(``Frame("tool")``) only at its ``content_block_stop``, its input whole: a cut anywhere inside
its JSON never yields a call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from reference_impl.events import Message
from reference_impl.payload import token_frames as tf
from reference_impl.payload.token_frames import Frame, ToolCall

if TYPE_CHECKING:
    from reference_impl.payload.tokens import TokenStreamSpec

PROFILE: Final = "anthropic"
HINT_KEY: Final = "tearline_expected_tokens"
THINKING: Final = ("Let me", " think: 流式", " 🚀 first.")
SIGNATURE: Final = "c2lnbmF0dXJlLXRlYXJsaW5l"
_PASSIVE = frozenset({"message_start", "ping"})


def tool_input(index: int) -> str:
    """Tool call ``index``'s input: JSON with multi-byte text, so cuts land inside both."""
    value = {"query": f"naïve 流式 🚀 #{index}", "limit": index + 3}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- producer ---------------------------------------------------------------------------------


def _delta(index: int, delta: dict[str, object]) -> Message:
    return tf.event({"type": "content_block_delta", "index": index, "delta": delta})


def _block(
    index: int, block: Mapping[str, object], deltas: Sequence[Mapping[str, object]], ping: bool
) -> Iterator[Message]:
    start = {"type": "content_block_start", "index": index, "content_block": dict(block)}
    yield tf.event(start)
    if ping:
        yield tf.event({"type": "ping"})
    for delta in deltas:
        yield _delta(index, dict(delta))
    yield tf.event({"type": "content_block_stop", "index": index})


def iter_messages(spec: TokenStreamSpec) -> Iterator[Message]:
    """Every frame of the stream, lazily."""
    rich = spec.thinking or spec.tools > 0 or spec.length_limited
    message = {"id": "msg_tearline", "type": "message", "role": "assistant", "content": []}
    yield tf.event({"type": "message_start", "message": message})
    if spec.advertise_length:
        yield tf.event({"type": "ping", HINT_KEY: len(spec.tokens)})
    index = 0
    if spec.thinking:
        pieces = [{"type": "thinking_delta", "thinking": t} for t in THINKING]
        signed = [*pieces, {"type": "signature_delta", "signature": SIGNATURE}]
        yield from _block(index, {"type": "thinking", "thinking": ""}, signed, ping=True)
        index += 1
    texts = [{"type": "text_delta", "text": t} for t in spec.tokens]
    yield from _block(index, {"type": "text", "text": ""}, texts, ping=rich and not spec.thinking)
    tools = 0 if spec.length_limited else spec.tools
    for call in range(tools):
        block = {
            "type": "tool_use",
            "id": f"toolu_tearline_{call}",
            "name": f"tearline_tool_{call}",
            "input": {},
        }
        parts = [
            {"type": "input_json_delta", "partial_json": p} for p in tf.fragments(tool_input(call))
        ]
        yield from _block(index + 1 + call, block, parts, ping=False)
    reason = "max_tokens" if spec.length_limited else "tool_use" if tools else "end_turn"
    stop = {"stop_reason": reason, "stop_sequence": None}
    usage = {"output_tokens": len(spec.tokens)}
    yield tf.event({"type": "message_delta", "delta": stop, "usage": usage})
    if spec.send_completion:
        yield tf.event({"type": "message_stop"})


# --- consumer side ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    type: str
    id: str = ""
    name: str = ""
    buffer: list[str] = field(default_factory=list)


def _dict(frame: dict[str, object], key: str) -> dict[str, object]:
    value = frame.get(key)
    if not isinstance(value, dict):
        raise tf.malformed(f"{key} is not an object")
    return value


class AnthropicReader:
    """Reads one Messages stream; see the module docstring. One reader per stream."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}

    def __call__(self, message: Message) -> Frame:
        frame = tf.json_object(message.data)
        kind = tf.typed(message, frame)
        if kind == "error":  # catalogue case 23: an error event after the 200
            raise tf.remote(f"error event: {frame.get('error')}")
        if kind == "message_stop":
            if self._blocks:
                raise tf.malformed(f"message_stop with blocks {sorted(self._blocks)} still open")
            return tf.SIGNAL
        if kind == "ping" and HINT_KEY in frame:
            return Frame("hint", count=tf.natural(frame[HINT_KEY]))
        if kind in _PASSIVE:
            return tf.OTHER
        if kind == "message_delta":
            return self._message_delta(frame)
        if kind == "content_block_start":
            return self._start(frame)
        if kind == "content_block_delta":
            return self._delta(frame)
        if kind == "content_block_stop":
            return self._stop(frame)
        raise tf.malformed(f"unknown event type {kind!r}")

    def _message_delta(self, frame: dict[str, object]) -> Frame:
        delta = frame.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        if reason == "max_tokens":
            raise tf.truncated_by_length("message_delta: stop_reason max_tokens")
        return tf.OTHER

    def _index(self, frame: dict[str, object]) -> int:
        return tf.natural(frame.get("index"), "block index")

    def _start(self, frame: dict[str, object]) -> Frame:
        index, block = self._index(frame), _dict(frame, "content_block")
        if index in self._blocks:
            raise tf.malformed(f"content block {index} started twice")
        kind = block.get("type")
        self._blocks[index] = _Block(
            kind if isinstance(kind, str) else "",
            str(block.get("id", "")),
            str(block.get("name", "")),
        )
        return tf.OTHER

    def _open(self, frame: dict[str, object]) -> _Block:
        index = self._index(frame)
        block = self._blocks.get(index)
        if block is None:
            raise tf.malformed(f"delta for content block {index}, which is not open")
        return block

    def _delta(self, frame: dict[str, object]) -> Frame:
        delta = frame.get("delta")
        if not isinstance(delta, dict):
            raise tf.malformed("content_block_delta without a delta")
        block, kind = self._open(frame), delta.get("type")
        expected = _DELTAS.get(block.type)
        if kind not in (expected, "signature_delta" if block.type == "thinking" else None):
            raise tf.malformed(f"{kind!r} for a {block.type!r} block")
        if kind == "text_delta":
            return tf.token(delta.get("text"))
        if kind == "input_json_delta":
            block.buffer.append(tf.unicode_text(delta.get("partial_json"), "partial_json"))
        elif kind == "thinking_delta":
            tf.unicode_text(delta.get("thinking"), "thinking")
        return tf.FRAGMENT

    def _stop(self, frame: dict[str, object]) -> Frame:
        index = self._index(frame)
        block = self._blocks.pop(index, None)
        if block is None:
            raise tf.malformed(f"content_block_stop for block {index}, which is not open")
        if block.type != "tool_use":
            return tf.OTHER
        arguments = "".join(block.buffer) or "{}"  # a tool without input streams no fragment
        tf.whole_json(arguments, f"tool_use {block.name!r}")
        return Frame("tool", call=ToolCall(block.id, block.name, arguments))


_DELTAS = {"text": "text_delta", "tool_use": "input_json_delta", "thinking": "thinking_delta"}
