"""Seed 002's token stream: LLM-style token frames, a completion signal, an optional length hint.

One frame is one framing message of compact UTF-8 JSON (multi-byte characters raw, so cuts land
inside them). Four producer profiles (design decision 5), frames in order, ``[..]`` optional:

``openai``: ``[hint] token* finish signal``
    token ``{"choices":[{"index":0,"delta":{"content":TOKEN}}]}``;
    finish ``{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}``;
    signal: the frame data is exactly ``[DONE]`` (``[DONE] junk`` is malformed, not a prefix match).
``anthropic``: ``message_start [hint] content_block_start token* content_block_stop
message_delta signal``
    token ``{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":TOKEN}}``;
    signal ``{"type":"message_stop"}``. ``Message.kind`` is the ``type``, so SSE writes
    ``event: <type>``; a consumer that sees both checks they agree. Settings add thinking and
    ``tool_use`` blocks, pings and the ``max_tokens`` stop reason; see ``anthropic.py``.
``ollama`` (``/api/chat``, one JSON object per NDJSON line): ``[hint] token* signal``
    token ``{"model":"tearline","created_at":T,"message":{"role":"assistant","content":TOKEN},
    "done":false}``; signal the frame with ``"done":true`` and its ``done_reason``: ``"stop"``,
    or ``"length"`` when a token limit stopped the model (``stop_reason``). A token-limit stop
    is an explicit end (design decision 3, catalogue case 25: the stream is complete, the answer
    is not), so it is ``COMPLETE_EXPLICIT`` and its receipt names the reason; a ``"done":true``
    without a ``done_reason`` proves nothing and is malformed, as is a frame without ``done``.
    An ``{"error":…}`` line (Ollama's in-band error) is ``REMOTE_ERROR``.
``generic`` (ours): ``[hint] token* signal``
    token ``{"token":TOKEN}``; signal ``{"done":true,"tokens":N}``, whose N must equal the
    tokens received (it also catches a token dropped in the middle).
``openai-responses``: OpenAI's Responses API, typed events numbered by ``sequence_number``,
    text and function-call output items, signal ``response.completed``; see ``responses.py``.

The length hint (seed 002's ``expected_stream_length_hint``, in tokens) rides in a frame that
each profile's own clients skip: openai ``{"choices":[],"tearline_expected_tokens":N}`` (empty
choices, like the usage chunk); anthropic ``{"type":"ping","tearline_expected_tokens":N}`` (pings
are ignored, and it follows ``message_start`` because SDKs insist on that event first); ollama a
``"done":false`` frame with empty content and the key (clients take the content, which is
empty); generic ``{"expected_tokens":N}``. A hint is read only before the first token.

A token is a frame carrying non-empty text; ``received_tokens`` counts those. ``send_completion``
False drops only the signal frame: everything else looks finished, but the producer never said
so, which is exactly the case a consumer must not accept (catalogue case 21).

``TokenTracker`` reads whole frames and fails closed: not UTF-8 -> ``INVALID_UTF8`` (never
repaired, design decision 4); not JSON, an unexpected shape, a hint after a token, more tokens
than the hint, a frame after the signal -> ``MALFORMED_PAYLOAD``; an in-band error event ->
``REMOTE_ERROR``. Whether the end was complete is for ``partial_stream_guard`` to judge, from
``tracker.state(terminal_safe)``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.partial_stream_guard import StreamState
from reference_impl.payload import anthropic, responses
from reference_impl.payload import token_frames as tf
from reference_impl.payload.token_frames import Frame, Reader, ToolCall

PROFILES: Final = ("openai", "anthropic", "generic", "ollama", responses.PROFILE)
#: why a model stopped, as ``TokenStreamSpec.stop_reason`` names it: its own end, or a limit
STOP_REASONS: Final = ("stop", "length")
HINT_KEY: Final = "tearline_expected_tokens"
DONE: Final = b"[DONE]"

CutPoint = Literal["none", "utf8-char", "invalid-utf8", "json-value", "frame"]

# Wide tokens alternate 2-, 4- and 3-byte characters, so any three in a row hold all widths.
_WIDE = (" café", " 🚀", " 流式", " naïve", "🙂", " 数据")
_NARROW = (" the", " stream", " agent", " token", ",", ".", ' "quoted"', " back\\slash")


def default_tokens(count: int, seed: int = 0) -> tuple[str, ...]:
    """``count`` deterministic tokens; every third is multi-byte (é, 🚀, CJK, ...), so from 8
    tokens on, cuts inside 2-, 3- and 4-byte characters are all possible."""
    rng = random.Random(seed)
    return tuple(
        _WIDE[(i // 3 + seed) % len(_WIDE)] if i % 3 == 1 else rng.choice(_NARROW)
        for i in range(count)
    )


@dataclass(frozen=True, slots=True)
class TokenStreamSpec:
    """What a token producer streams; see the module docstring for the frames.

    ``tools``: tool calls after the text (``openai-responses``, ``anthropic``);
    ``length_limited``: the producer stops at its output limit and says so
    (``response.incomplete``, stop reason ``max_tokens``); ``thinking``: a thinking block first
    (``anthropic``); ``seed``: the generator of the random-looking parts (the Responses
    ``obfuscation`` padding)."""

    profile: str
    tokens: tuple[str, ...]
    advertise_length: bool = False
    send_completion: bool = True
    #: why the model stopped (``STOP_REASONS``); only the ollama profile writes ``length``
    stop_reason: str = "stop"
    tools: int = 0
    length_limited: bool = False
    thinking: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"unknown profile {self.profile!r}; known: {PROFILES}")
        if self.stop_reason not in STOP_REASONS:
            raise ValueError(f"unknown stop reason {self.stop_reason!r}; known: {STOP_REASONS}")
        if self.stop_reason != "stop" and self.profile != "ollama":
            raise ValueError("only the ollama profile writes a stop reason (done_reason)")
        if not all(isinstance(t, str) and t for t in self.tokens):
            raise ValueError("tokens must be non-empty strings (an empty one is not a token)")
        if self.tools < 0:
            raise ValueError("tools must be >= 0")


def iter_messages(spec: TokenStreamSpec) -> Iterator[Message]:
    """Every frame of the stream, lazily."""
    return _ENCODERS[spec.profile](spec)


_message = tf.encode


def _openai(spec: TokenStreamSpec) -> Iterator[Message]:
    if spec.advertise_length:
        yield _message({"choices": [], HINT_KEY: len(spec.tokens)})
    for token in spec.tokens:
        yield _message({"choices": [{"index": 0, "delta": {"content": token}}]})
    yield _message({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if spec.send_completion:
        yield Message(DONE)


def _generic(spec: TokenStreamSpec) -> Iterator[Message]:
    if spec.advertise_length:
        yield _message({"expected_tokens": len(spec.tokens)})
    for token in spec.tokens:
        yield _message({"token": token})
    if spec.send_completion:
        yield _message({"done": True, "tokens": len(spec.tokens)})


#: what every Ollama frame starts with (a fixed time: the wire is the same on every run)
_OLLAMA_HEAD: Final = {"model": "tearline", "created_at": "2026-01-01T00:00:00Z"}


def _ollama_frame(content: str, done: bool, **more: object) -> Message:
    said = {"role": "assistant", "content": content}
    return _message({**_OLLAMA_HEAD, "message": said, "done": done, **more})


def _ollama(spec: TokenStreamSpec) -> Iterator[Message]:
    if spec.advertise_length:
        yield _ollama_frame("", False, **{HINT_KEY: len(spec.tokens)})
    for token in spec.tokens:
        yield _ollama_frame(token, False)
    if spec.send_completion:
        yield _ollama_frame("", True, done_reason=spec.stop_reason, eval_count=len(spec.tokens))


_ENCODERS: dict[str, Callable[[TokenStreamSpec], Iterator[Message]]] = {
    "openai": _openai,
    "anthropic": anthropic.iter_messages,
    "generic": _generic,
    "ollama": _ollama,
    responses.PROFILE: responses.iter_messages,
}


# --- consumer side ----------------------------------------------------------------------------

_OTHER = tf.OTHER
_SIGNAL = tf.SIGNAL
_malformed = tf.malformed
_object = tf.json_object
_count = tf.natural
_text = tf.token


def _decode_openai(message: Message) -> Frame:
    if message.data == DONE:
        return _SIGNAL
    frame = _object(message.data)
    if "error" in frame:  # catalogue case 27: an in-band error after HTTP 200
        raise CodecError(ErrorCode.REMOTE_ERROR, str(frame["error"]), at_boundary=True)
    choices = frame.get("choices")
    if choices == [] and HINT_KEY in frame:
        return Frame("hint", count=_count(frame[HINT_KEY]))
    if choices == []:
        return _OTHER  # a usage chunk
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        raise _malformed("expected exactly one choice")
    delta = choices[0].get("delta")
    if not isinstance(delta, dict):
        raise _malformed("choice without a delta")
    content = delta.get("content")
    return _OTHER if content is None else _text(content)  # role-only or finish chunk: other


def _decode_generic(message: Message) -> Frame:
    frame = _object(message.data)
    keys = frame.keys()
    if keys == {"token"}:
        return _text(frame["token"])
    if keys == {"expected_tokens"}:
        return Frame("hint", count=_count(frame["expected_tokens"]))
    if keys == {"done", "tokens"} and frame["done"] is True:
        return Frame("signal", count=_count(frame["tokens"]))
    raise _malformed(f"unexpected generic frame with keys {sorted(keys)}")


def _decode_ollama(message: Message) -> Frame:
    frame = _object(message.data)
    if "error" in frame:  # Ollama's in-band error line, after HTTP 200
        raise CodecError(ErrorCode.REMOTE_ERROR, str(frame["error"]), at_boundary=True)
    done = frame.get("done")
    if not isinstance(done, bool):
        raise _malformed("frame without a boolean done")
    if done:
        reason = frame.get("done_reason")
        if not isinstance(reason, str) or not reason:
            raise _malformed("done without a done_reason: no proof of why the stream ended")
        return _SIGNAL
    said = frame.get("message")
    if not isinstance(said, dict):
        raise _malformed("frame without a message")
    content = said.get("content", "")
    if HINT_KEY in frame and content == "":
        return Frame("hint", count=_count(frame[HINT_KEY]))
    return _text(content)  # empty content (a tool call, say): other


#: each profile's reader, made fresh for every stream (a reader may keep state)
_READERS: dict[str, Callable[[], Reader]] = {
    "openai": lambda: _decode_openai,
    "anthropic": anthropic.AnthropicReader,
    "generic": lambda: _decode_generic,
    "ollama": lambda: _decode_ollama,
    responses.PROFILE: responses.ResponsesReader,
}


class TokenTracker:
    """Reads a token stream frame by frame and records what seed 002's guard needs.

    Feed each whole framing message to ``feed``. When the stream ends (cleanly or not), ask
    ``state(terminal_safe)`` and hand it to ``PartialStreamGuard``; ``terminal_safe`` is whether
    the framing stopped between messages (``classify_cut(codec.partial()) == "none"``). After a
    ``CodecError`` the tracker is dead and every ``feed`` raises the same code again.
    """

    def __init__(self, profile: str) -> None:
        if profile not in _READERS:
            raise ValueError(f"unknown profile {profile!r}; known: {PROFILES}")
        self.profile = profile
        self._decode = _READERS[profile]()
        self._parts: list[str] = []
        self._calls: list[ToolCall] = []
        self._progress = 0
        self._sha = hashlib.sha256()
        self._received = 0
        self._expected: int | None = None
        self._receipt: str | None = None
        self._error: CodecError | None = None

    @property
    def text(self) -> str:
        """The concatenated token text received so far."""
        return "".join(self._parts)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls received whole (a call cut anywhere inside is never among them)."""
        return tuple(self._calls)

    @property
    def content_frames(self) -> int:
        """Frames that carried content so far: tokens, tool-call fragments and whole calls."""
        return self._progress

    @property
    def received_tokens(self) -> int:
        """Token frames (frames with non-empty text) received so far."""
        return self._received

    @property
    def expected_length(self) -> int | None:
        """The advertised length hint in tokens, None if there was none."""
        return self._expected

    @property
    def completion_signal_present(self) -> bool:
        """True once the profile's completion signal arrived (and nothing else)."""
        return self._receipt is not None

    @property
    def completion_receipt(self) -> str | None:
        """Seed 002's ``stream_completion_signal_receipt``: the profile and the signal frame as
        received (``'openai: [DONE]'``), None until it arrives."""
        return self._receipt

    def feed(self, message: Message) -> None:
        """Take one whole frame; raise ``CodecError`` at the first violation."""
        if self._error is not None:
            err = self._error
            raise CodecError(err.code, err.detail, at_boundary=err.at_boundary)
        try:
            self._accept(message)
        except CodecError as err:
            self._error = err
            raise

    def _accept(self, message: Message) -> None:
        self._sha.update(message.data)
        if self._receipt is not None:
            raise _malformed("frame after the completion signal")
        frame = self._decode(message)
        if frame.kind == "hint":
            if self._received or self._expected is not None:
                raise _malformed("length hint after the stream started")
            self._expected = frame.count
        elif frame.kind == "token":
            if self._expected is not None and self._received >= self._expected:
                raise _malformed(f"more tokens than the advertised {self._expected}")
            self._parts.append(frame.text)
            self._received += 1
            self._progress += 1
        elif frame.kind in ("fragment", "tool"):
            self._progress += 1
            if frame.call is not None:
                self._calls.append(frame.call)
        elif frame.kind == "signal":
            if frame.count is not None and frame.count != self._received:
                raise _malformed(f"signal says {frame.count} tokens, got {self._received}")
            # the producer advertised a length: a signal that arrives short of it is no proof
            if self._expected is not None and self._received != self._expected:
                raise _malformed(
                    f"completion signal after {self._received} of the advertised "
                    f"{self._expected} tokens"
                )
            self._receipt = frame.receipt or f"{self.profile}: {message.data.decode()}"

    def _length_hint(self) -> int | None:
        """The hint as a proof of the end (seed 002 gate 2): it counts tokens only, so once
        other content came (a tool call's fragments, a thinking block) it proves nothing and
        only the terminal event can end the stream."""
        return self._expected if self._progress == self._received else None

    @property
    def length_proves_end(self) -> bool:
        """As many tokens as the advertised length, and no content the hint does not count."""
        hint = self._length_hint()
        return hint is not None and self._received == hint

    def state(self, terminal_safe: bool) -> StreamState:
        """Seed 002's ``StreamState`` for the stream as received (lengths in tokens)."""
        return StreamState(
            completion_signal_present=self.completion_signal_present,
            expected_length=self._length_hint(),
            received_length=self._received,
            terminal_byte_is_safe_boundary=terminal_safe,
        )

    def partial_stream_hash(self, tail: bytes = b"") -> str:
        """Seed 002's ``partial_stream_hash``: hex SHA-256 of every frame's data as received,
        concatenated in order, then ``tail`` (the bytes of a frame cut short, if any). Valid
        frames are JSON objects or ``[DONE]``, which delimit themselves, so no separator."""
        sha = self._sha.copy()
        sha.update(tail)
        return sha.hexdigest()

    def recovery_predicate(self) -> str:
        """Seed 002's ``stream_recovery_predicate``: ``NONE`` when the stream proved its end
        (signal, or the advertised length) without error, else ``REFETCH_ALL``: a generation
        cannot be resumed mid-way, a new request streams a new answer."""
        complete = self.completion_signal_present or (
            self._length_hint() is not None and self._received == self._expected
        )
        return "NONE" if complete and self._error is None else "REFETCH_ALL"


def classify_cut(partial: bytes) -> CutPoint:
    """Where a frame cut short stopped, to explain ``PARTIAL_MID_TOKEN``.

    ``"none"``: nothing in flight (a clean boundary); ``"utf8-char"``: inside a multi-byte UTF-8
    character; ``"invalid-utf8"``: the bytes are not UTF-8 even allowing for the cut (garbage,
    not a cut); ``"json-value"``: valid UTF-8 but not yet a whole JSON value; ``"frame"``: a
    whole value (or ``[DONE]``) that the framing still says was cut short.
    """
    if not partial:
        return "none"
    try:
        text = partial.decode("utf-8")
    except UnicodeDecodeError as exc:
        # CPython gives this reason only for a sequence that is valid so far but cut by the end
        # of the input (maximal-subpart rule); garbage anywhere, such as b"\xed\xa0" (a
        # surrogate), is reported first. An incremental decoder is laxer: it buffers b"\xed\xa0".
        return "utf8-char" if exc.reason == "unexpected end of data" else "invalid-utf8"
    if partial == DONE:
        return "frame"
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return "json-value"
    return "frame"
