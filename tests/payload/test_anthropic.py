"""The ``anthropic`` token profile in full: content blocks by index, thinking, ``tool_use``
input assembled from ``input_json_delta`` and handed on only whole, pings anywhere, stop reasons
and the ``error`` event. The default one-text-block stream is pinned in ``test_tokens.py``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.payload import anthropic
from reference_impl.payload.token_frames import ToolCall
from reference_impl.payload.tokens import TokenStreamSpec, TokenTracker, iter_messages
from tests.wire import bytewise, decode, examples, produce_wire, split_at

MALFORMED = ErrorCode.MALFORMED_PAYLOAD
PING = Message(b'{"type":"ping"}', "ping")
OVERLOADED = Message(
    b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "error"
)


def frames(tokens: tuple[str, ...] = ("Hi",), **options: object) -> list[Message]:
    return list(iter_messages(TokenStreamSpec("anthropic", tokens, **options)))  # type: ignore[arg-type]


def track(stream: list[Message]) -> TokenTracker:
    tracker = TokenTracker("anthropic")
    for message in stream:
        tracker.feed(message)
    return tracker


def code_of(stream: list[Message]) -> ErrorCode:
    with pytest.raises(CodecError) as info:
        track(stream)
    return info.value.code


def call(index: int) -> ToolCall:
    return ToolCall(
        f"toolu_tearline_{index}", f"tearline_tool_{index}", anthropic.tool_input(index)
    )


def frame(data: dict[str, object]) -> Message:
    return Message(json.dumps(data, ensure_ascii=False).encode(), str(data["type"]))


# --- producer ---------------------------------------------------------------------------------


def test_rich_stream_shape() -> None:
    stream = frames(thinking=True, tools=1)
    blocks = [
        (m.kind, json.loads(m.data).get("index"), json.loads(m.data).get("delta", {}).get("type"))
        for m in stream
    ]
    assert blocks == [
        ("message_start", None, None),
        ("content_block_start", 0, None),
        ("ping", None, None),
        *[("content_block_delta", 0, "thinking_delta")] * 3,
        ("content_block_delta", 0, "signature_delta"),
        ("content_block_stop", 0, None),
        ("content_block_start", 1, None),
        ("content_block_delta", 1, "text_delta"),
        ("content_block_stop", 1, None),
        ("content_block_start", 2, None),
        *[("content_block_delta", 2, "input_json_delta")] * 5,
        ("content_block_stop", 2, None),
        ("message_delta", None, None),
        ("message_stop", None, None),
    ]
    assert json.loads(stream[-2].data)["delta"]["stop_reason"] == "tool_use"
    pieces = "".join(json.loads(m.data)["delta"]["partial_json"] for m in stream[12:17])
    assert pieces == '{"query":"naïve 流式 🚀 #0","limit":3}'


def test_default_shape_is_unchanged_by_the_new_settings() -> None:
    plain = frames(("a", "b"))
    assert [m.kind for m in plain] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 2,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert b"ping" not in b"".join(m.data for m in plain)


def test_length_limited_stops_with_max_tokens_and_no_tools() -> None:
    stream = frames(length_limited=True, tools=2)
    assert json.loads(stream[-2].data)["delta"]["stop_reason"] == "max_tokens"
    assert b"tool_use" not in b"".join(m.data for m in stream)


# --- reader -----------------------------------------------------------------------------------


@pytest.mark.parametrize("tools", [0, 1, 3])
@pytest.mark.parametrize("thinking", [False, True])
def test_whole_rich_stream_is_complete(tools: int, thinking: bool) -> None:
    tracker = track(frames((" café", " 🚀"), tools=tools, thinking=thinking, advertise_length=True))
    assert tracker.text == " café 🚀"  # thinking is not the answer's text
    assert tracker.received_tokens == 2
    assert tracker.tool_calls == tuple(call(i) for i in range(tools))
    assert tracker.completion_receipt == 'anthropic: {"type":"message_stop"}'


def test_max_tokens_is_truncation_by_length() -> None:
    stream = frames(length_limited=True)
    assert code_of(stream) is ErrorCode.OUTPUT_TRUNCATED
    assert track(stream[:-2]).text == "Hi"


@pytest.mark.parametrize("at", range(1, 20))
def test_a_ping_anywhere_changes_nothing(at: int) -> None:
    stream = frames(thinking=True, tools=1)
    tracker = track([*stream[:at], PING, *stream[at:]])
    assert (tracker.text, tracker.tool_calls) == ("Hi", (call(0),))
    assert tracker.completion_signal_present


@pytest.mark.parametrize("at", [1, 4, 9, 13, 17, 19])
def test_an_overloaded_error_anywhere_is_a_remote_error(at: int) -> None:
    stream = frames(thinking=True, tools=1)
    tracker = TokenTracker("anthropic")
    for message in stream[:at]:
        tracker.feed(message)
    with pytest.raises(CodecError) as info:
        tracker.feed(OVERLOADED)
    assert info.value.code is ErrorCode.REMOTE_ERROR
    assert "overloaded_error" in info.value.detail
    assert tracker.tool_calls == (() if at <= 17 else (call(0),))
    assert not tracker.completion_signal_present


@examples(80)
@given(tools=st.integers(1, 3), thinking=st.booleans(), data=st.data())
def test_no_prefix_hands_on_a_partial_tool_call(
    tools: int, thinking: bool, data: st.DataObject
) -> None:
    stream = frames(tools=tools, thinking=thinking)
    keep = data.draw(st.integers(0, len(stream)))
    tracker = track(stream[:keep])
    starts = [json.loads(m.data) for m in stream[:keep]]
    tool_blocks = {
        f["index"]
        for f in starts
        if f["type"] == "content_block_start" and f["content_block"]["type"] == "tool_use"
    }
    stopped = sum(
        1 for f in starts if f["type"] == "content_block_stop" and f["index"] in tool_blocks
    )
    assert tracker.tool_calls == tuple(call(i) for i in range(stopped))


def _swap_delta(stream: list[Message], at: int, **delta: object) -> list[Message]:
    data = json.loads(stream[at].data)
    data["delta"] = {**data["delta"], **delta}
    return [*stream[:at], frame(data), *stream[at + 1 :]]


RICH = frames(thinking=True, tools=1)


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param([*RICH[:12], *RICH[13:]], id="tool-input-fragment-lost"),
        pytest.param(_swap_delta(RICH, 16, partial_json=""), id="tool-input-without-its-close"),
        pytest.param(
            _swap_delta(RICH, 9, type="input_json_delta", partial_json="{"), id="json-into-text"
        ),
        pytest.param(_swap_delta(RICH, 12, type="text_delta", text="x"), id="text-into-tool"),
        pytest.param(_swap_delta(RICH, 3, type="text_delta", text="x"), id="text-into-thinking"),
        pytest.param([*RICH[:8], RICH[1], *RICH[8:]], id="block-started-twice"),
        pytest.param([*RICH[:11], *RICH[12:]], id="delta-before-its-block-starts"),
        pytest.param([*RICH[:17], RICH[17], *RICH[17:]], id="block-stopped-twice"),
        pytest.param([*RICH[:17], *RICH[18:]], id="message-stop-with-a-block-open"),
        pytest.param([*RICH[:5], frame({"type": "telemetry"}), *RICH[5:]], id="unknown-event"),
    ],
)
def test_malformed_rich_stream(stream: list[Message]) -> None:
    assert code_of(stream) is MALFORMED


def test_a_lost_tool_fragment_never_yields_the_call() -> None:
    tracker = TokenTracker("anthropic")
    with pytest.raises(CodecError):
        for message in [*RICH[:12], *RICH[13:]]:
            tracker.feed(message)
    assert tracker.tool_calls == ()
    assert tracker.text == "Hi"


# --- on the wire: SSE, any split --------------------------------------------------------------


def _decoded(pieces: list[bytes]) -> TokenTracker:
    tracker = TokenTracker("anthropic")
    for event in decode("sse", pieces):
        if isinstance(event, Message):
            tracker.feed(event)
    return tracker


def test_rich_stream_decodes_at_every_split() -> None:
    _, wire = produce_wire("sse", RICH)
    whole = _decoded([wire])
    assert (whole.text, whole.tool_calls) == ("Hi", (call(0),))
    for at in range(len(wire) + 1):
        tracker = _decoded(split_at(wire, [at]))
        assert (tracker.text, tracker.tool_calls, tracker.completion_receipt) == (
            whole.text,
            whole.tool_calls,
            whole.completion_receipt,
        )
    assert _decoded(bytewise(wire)).tool_calls == (call(0),)


@examples(40)
@given(cuts=st.lists(st.integers(0, 5000), max_size=12))
def test_rich_stream_decodes_at_hypothesis_splits(cuts: list[int]) -> None:
    _, wire = produce_wire("sse", frames((" 流式",), tools=2, thinking=True))
    tracker = _decoded(split_at(wire, cuts))
    assert (tracker.text, tracker.tool_calls) == (" 流式", (call(0), call(1)))
    assert tracker.completion_signal_present


def test_a_length_hint_proves_nothing_with_thinking_or_tools() -> None:
    for options in ({"thinking": True}, {"tools": 1}):
        stream = frames(("a", "b"), advertise_length=True, send_completion=False, **options)
        tracker = track(stream)
        assert (tracker.received_tokens, tracker.expected_length) == (2, 2)
        assert not tracker.length_proves_end, options
    assert track(frames(("a",), advertise_length=True, send_completion=False)).length_proves_end
