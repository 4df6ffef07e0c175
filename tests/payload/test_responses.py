"""The ``openai-responses`` token profile: typed events, sequence numbers, obfuscation, tool
calls handed on only whole, and the three ends (completed, incomplete, failed/error)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.partial_stream_guard import (
    PartialStreamGuard,
    PartialStreamVerdict,
    StreamPolicy,
)
from reference_impl.payload import responses
from reference_impl.payload.token_frames import ToolCall, fragments
from reference_impl.payload.tokens import TokenStreamSpec, TokenTracker, iter_messages
from tests.wire import bytewise, decode, examples, produce_wire, split_at

PROFILE = "openai-responses"
TOKENS = ("Hi", " café", " 🚀")
SEQ = ErrorCode.SEQUENCE_BROKEN
MALFORMED = ErrorCode.MALFORMED_PAYLOAD
REMOTE = ErrorCode.REMOTE_ERROR


def frames(**options: object) -> list[Message]:
    spec = TokenStreamSpec(PROFILE, options.pop("tokens", TOKENS), **options)  # type: ignore[arg-type]
    return list(iter_messages(spec))


def track(stream: list[Message]) -> TokenTracker:
    tracker = TokenTracker(PROFILE)
    for message in stream:
        tracker.feed(message)
    return tracker


def code_of(stream: list[Message]) -> ErrorCode:
    with pytest.raises(CodecError) as info:
        track(stream)
    return info.value.code


def obj(message: Message) -> dict[str, object]:
    value = json.loads(message.data)
    assert isinstance(value, dict)
    return value


def renumber(stream: list[Message]) -> list[Message]:
    """The same events numbered 0, 1, 2, ... again: to test what the reader checks beyond the
    numbering, a frame moved or repeated must not fail on its number first."""
    out = []
    for number, message in enumerate(stream):
        frame = obj(message)
        frame["sequence_number"] = number
        data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(Message(data, message.kind))
    return out


def call(index: int) -> ToolCall:
    return ToolCall(
        f"call_tearline_{index}", f"tearline_tool_{index}", responses.tool_arguments(index)
    )


# --- producer ---------------------------------------------------------------------------------


def test_event_sequence_with_a_tool_call() -> None:
    stream = frames(tokens=("Hi",), tools=1)
    assert [(m.kind, obj(m)["sequence_number"]) for m in stream] == [
        (kind, n)
        for n, kind in enumerate(
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                *["response.function_call_arguments.delta"] * 7,
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        )
    ]
    assert all(m.kind == obj(m)["type"] for m in stream)
    delta = obj(stream[4])
    assert (delta["delta"], delta["item_id"], delta["output_index"]) == ("Hi", "msg_tearline", 0)
    arguments = "".join(str(obj(m)["delta"]) for m in stream[9:16])
    assert arguments == '{"query":"naïve 流式 🚀 #0","limit":3,"exact":true}'
    assert json.loads(arguments) == {"query": "naïve 流式 🚀 #0", "limit": 3, "exact": True}


def test_deltas_carry_seeded_obfuscation_that_comparisons_ignore() -> None:
    one, same, other = frames(seed=1, tools=1), frames(seed=1, tools=1), frames(seed=2, tools=1)
    assert one == same
    deltas = [i for i, m in enumerate(one) if m.kind.endswith(".delta")]
    assert len(deltas) == 3 + 7
    for i in deltas:
        pad = obj(one[i])["obfuscation"]
        assert isinstance(pad, str) and 1 <= len(pad) <= 16 and pad.isalnum()
    assert [one[i] for i in deltas] != [other[i] for i in deltas]
    assert [responses.comparable(m.data) for m in one] == [
        responses.comparable(m.data) for m in other
    ]
    assert all("obfuscation" not in obj(m) for i, m in enumerate(one) if i not in deltas)
    assert b"obfuscation" not in responses.comparable(one[deltas[0]].data)
    assert responses.comparable(b"[DONE]") == b"[DONE]"


def test_length_limited_ends_with_response_incomplete() -> None:
    stream = frames(length_limited=True, tools=2)
    last = obj(stream[-1])
    assert last["type"] == "response.incomplete"
    response = last["response"]
    assert isinstance(response, dict)
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert not any(m.kind == "response.function_call_arguments.delta" for m in stream)


# --- reader: the whole stream -----------------------------------------------------------------


@pytest.mark.parametrize("tools", [0, 1, 3])
@pytest.mark.parametrize("advertise", [False, True])
def test_whole_stream_is_complete_explicit(tools: int, advertise: bool) -> None:
    stream = frames(tools=tools, advertise_length=advertise)
    tracker = track(stream)
    assert tracker.text == "Hi café 🚀"
    assert tracker.received_tokens == 3
    assert tracker.expected_length == (3 if advertise else None)
    assert tracker.tool_calls == tuple(call(i) for i in range(tools))
    assert tracker.completion_receipt == (
        f"openai-responses: response.completed (sequence_number {len(stream) - 1})"
    )
    verdict = PartialStreamGuard.evaluate_stream(tracker.state(True), StreamPolicy(True)).verdict
    assert verdict is PartialStreamVerdict.COMPLETE_EXPLICIT


def test_max_output_tokens_is_truncation_by_length() -> None:
    stream = frames(length_limited=True)
    assert code_of(stream) is ErrorCode.OUTPUT_TRUNCATED
    tracker = TokenTracker(PROFILE)
    for message in stream[:-1]:
        tracker.feed(message)
    assert tracker.text == "Hi café 🚀"  # what came before the end is still the text so far
    assert not tracker.completion_signal_present


def test_without_a_terminal_event_the_stream_is_not_complete() -> None:
    tracker = track(frames(tools=1, send_completion=False))
    assert not tracker.completion_signal_present
    assert tracker.tool_calls == (call(0),)
    verdict = PartialStreamGuard.evaluate_stream(tracker.state(True), StreamPolicy(False)).verdict
    assert verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN
    assert tracker.recovery_predicate() == "REFETCH_ALL"


# --- sequence numbers -------------------------------------------------------------------------


@pytest.mark.parametrize("at", [1, 4, 6, 12])
def test_a_gap_is_detected(at: int) -> None:
    stream = frames(tools=1)
    del stream[at]
    assert code_of(stream) is SEQ


@pytest.mark.parametrize("at", [0, 4, 12])
def test_a_duplicate_is_detected(at: int) -> None:
    stream = frames(tools=1)
    stream.insert(at + 1, stream[at])
    assert code_of(stream) is SEQ


@pytest.mark.parametrize("at", [4, 5, 10])
def test_a_reordering_is_detected(at: int) -> None:
    stream = frames(tools=1)
    stream[at], stream[at + 1] = stream[at + 1], stream[at]
    assert code_of(stream) is SEQ


@pytest.mark.parametrize("value", [None, "3", True, 1.0])
def test_sequence_number_must_be_an_integer(value: object) -> None:
    frame = obj(frames()[0])
    frame["sequence_number"] = value
    assert code_of([Message(json.dumps(frame).encode(), "response.created")]) is MALFORMED


# --- in-band errors and ends ------------------------------------------------------------------


def _after_text(frame: dict[str, object]) -> list[Message]:
    stream = frames(tools=1)[:6]
    frame["sequence_number"] = 6
    return [*stream, Message(json.dumps(frame).encode(), str(frame["type"]))]


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"type": "error", "code": "server_error", "message": "boom", "param": None}, REMOTE),
        (
            {
                "type": "response.failed",
                "response": {"status": "failed", "error": {"code": "server_error", "message": "x"}},
            },
            REMOTE,
        ),
        (
            {
                "type": "response.incomplete",
                "response": {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            },
            ErrorCode.OUTPUT_TRUNCATED,
        ),
        (
            {
                "type": "response.incomplete",
                "response": {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "content_filter"},
                },
            },
            REMOTE,
        ),
        ({"type": "response.completed", "response": {}}, MALFORMED),  # an item still open
    ],
)
def test_ends_after_partial_text(frame: dict[str, object], code: ErrorCode) -> None:
    assert code_of(_after_text(frame)) is code


def test_an_error_inside_tool_arguments_never_hands_on_the_call() -> None:
    stream = frames(tools=1)
    tracker = TokenTracker(PROFILE)
    for message in stream[:14]:  # three argument deltas in
        tracker.feed(message)
    error = {"type": "error", "code": "overloaded", "message": "later", "sequence_number": 14}
    with pytest.raises(CodecError) as info:
        tracker.feed(Message(json.dumps(error).encode(), "error"))
    assert info.value.code is REMOTE
    assert tracker.tool_calls == ()


@examples(60)
@given(tools=st.integers(1, 3), data=st.data())
def test_no_prefix_hands_on_a_partial_tool_call(tools: int, data: st.DataObject) -> None:
    stream = frames(tools=tools)
    keep = data.draw(st.integers(0, len(stream)))
    tracker = track(stream[:keep])
    done = sum(
        1
        for m in stream[:keep]
        if m.kind == "response.output_item.done" and b"function_call" in m.data
    )
    assert tracker.tool_calls == tuple(call(i) for i in range(done))


# --- malformed streams ------------------------------------------------------------------------


def _mutated_in(stream: list[Message], at: int, **changes: object) -> list[Message]:
    frame = {**obj(stream[at]), **changes}
    data = json.dumps(frame, ensure_ascii=False).encode()
    return [*stream[:at], Message(data, stream[at].kind), *stream[at + 1 :]]


def _mutated(at: int, **changes: object) -> list[Message]:
    return _mutated_in(frames(tools=1), at, **changes)


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(_mutated(7, text="Hi café"), id="text-done-differs"),
        pytest.param(_mutated(18, arguments='{"query":'), id="arguments-done-differs"),
        pytest.param(_mutated(4, output_index=1), id="delta-for-no-open-message"),
        pytest.param(_mutated(11, output_index=0), id="arguments-for-a-message"),
        pytest.param(_mutated(4, delta=5), id="delta-not-a-string"),
        pytest.param(_mutated(0, type="response.in_progress"), id="event-type-disagree"),
        pytest.param(renumber(frames()[1:]), id="no-response-created"),
        pytest.param(renumber([*frames(), frames()[4]]), id="frame-after-the-end"),
        pytest.param(renumber([*frames()[:3], frames()[2], *frames()[3:]]), id="item-added-twice"),
        pytest.param(renumber([*frames()[:10], frames()[9]]), id="item-done-twice"),
    ],
)
def test_malformed_stream(stream: list[Message]) -> None:
    assert code_of(stream) is MALFORMED


def test_arguments_that_are_not_whole_json_are_refused() -> None:
    # the last fragment (the closing brace) lost, and .done agreeing with what came: the
    # deltas and .done match, yet the arguments are no JSON value, so no call is handed on
    stream = frames(tools=1)
    short = fragments(responses.tool_arguments(0))[:-1]
    del stream[17]
    stream = _mutated_in(stream, 17, arguments="".join(short))
    tracker = TokenTracker(PROFILE)
    with pytest.raises(CodecError) as info:
        for message in renumber(stream):
            tracker.feed(message)
    assert info.value.code is MALFORMED
    assert tracker.tool_calls == ()


def test_unknown_event_types_are_tolerated_but_numbered() -> None:
    stream = frames()
    reasoning = {
        "type": "response.reasoning_summary_text.delta",
        "delta": "hmm",
        "sequence_number": 2,
    }
    extra = Message(json.dumps(reasoning).encode(), "response.reasoning_summary_text.delta")
    tracker = track(renumber([*stream[:2], extra, *stream[2:]]))
    assert tracker.text == "Hi café 🚀"
    assert code_of([*stream[:2], extra, *stream[2:]]) is SEQ  # numbered like any other


# --- on the wire: SSE, any split --------------------------------------------------------------


def _decoded_tracker(pieces: list[bytes]) -> TokenTracker:
    events = decode("sse", pieces)
    tracker = TokenTracker(PROFILE)
    for event in events:
        if isinstance(event, Message):
            tracker.feed(event)
    return tracker


def test_sse_writes_event_lines_and_decodes_at_every_split() -> None:
    stream = frames(tools=1)
    _, wire = produce_wire("sse", stream)
    assert b"event: response.output_text.delta\n" in wire
    assert b"event: response.completed\n" in wire
    whole = _decoded_tracker([wire])
    assert (whole.text, whole.tool_calls) == ("Hi café 🚀", (call(0),))
    for at in range(len(wire) + 1):
        tracker = _decoded_tracker(split_at(wire, [at]))
        assert (tracker.text, tracker.tool_calls, tracker.completion_receipt) == (
            whole.text,
            whole.tool_calls,
            whole.completion_receipt,
        )
    assert _decoded_tracker(bytewise(wire)).completion_receipt == whole.completion_receipt


@examples(40)
@given(cuts=st.lists(st.integers(0, 6000), max_size=12))
def test_sse_decodes_at_hypothesis_splits(cuts: list[int]) -> None:
    _, wire = produce_wire("sse", frames(tools=2, advertise_length=True))
    tracker = _decoded_tracker(split_at(wire, cuts))
    assert tracker.text == "Hi café 🚀"
    assert tracker.tool_calls == (call(0), call(1))
    assert tracker.expected_length == 3
    assert tracker.completion_signal_present


@pytest.mark.parametrize("keep", [14, 17, 20])  # inside the call's arguments (14, 17), at the end
def test_a_length_hint_proves_nothing_once_a_tool_call_streams(keep: int) -> None:
    # the hint counts tokens: all 3 arrived, but a function call followed, so only
    # response.completed can prove the end (never COMPLETE_BY_LENGTH with a call cut short)
    stream = frames(tools=1, advertise_length=True, send_completion=False)
    tracker = track(stream[:keep])
    assert (tracker.received_tokens, tracker.expected_length) == (3, 3)
    assert not tracker.length_proves_end
    verdict = PartialStreamGuard.evaluate_stream(tracker.state(True), StreamPolicy(False)).verdict
    assert verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN
    assert tracker.recovery_predicate() == "REFETCH_ALL"


def test_a_length_hint_still_proves_a_text_only_stream() -> None:
    tracker = track(frames(advertise_length=True, send_completion=False))
    assert tracker.length_proves_end
    verdict = PartialStreamGuard.evaluate_stream(tracker.state(True), StreamPolicy(False)).verdict
    assert verdict is PartialStreamVerdict.COMPLETE_BY_LENGTH
