"""The seed 002 token stream: four producer profiles, the tracker, and where a cut stopped."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.partial_stream_guard import (
    PartialStreamGuard,
    PartialStreamVerdict,
    StreamPolicy,
    StreamState,
)
from reference_impl.payload.tokens import (
    PROFILES,
    TokenStreamSpec,
    TokenTracker,
    classify_cut,
    default_tokens,
    iter_messages,
)
from tests.wire import examples

V = PartialStreamVerdict
TOKENS = ("Hi", " café", " 🚀", " 流式", ".")


def messages(profile: str, **options: Any) -> list[Message]:
    return list(iter_messages(TokenStreamSpec(profile, TOKENS, **options)))


def track(profile: str, frames: list[Message]) -> TokenTracker:
    tracker = TokenTracker(profile)
    for message in frames:
        tracker.feed(message)
    return tracker


def verdict(tracker: TokenTracker, *, safe: bool, accept: bool) -> PartialStreamVerdict:
    state = tracker.state(terminal_safe=safe)
    return PartialStreamGuard.evaluate_stream(state, StreamPolicy(accept)).verdict


def code_of(profile: str, frames: list[Message]) -> ErrorCode:
    with pytest.raises(CodecError) as info:
        track(profile, frames)
    return info.value.code


def first_token_index(frames: list[Message]) -> int:
    return next(i for i, m in enumerate(frames) if b"Hi" in m.data)


# --- producer ---------------------------------------------------------------------------------


def test_openai_frames_exactly() -> None:
    frames = list(iter_messages(TokenStreamSpec("openai", ("Hi", " é"), advertise_length=True)))
    assert [(m.data, m.kind) for m in frames] == [
        (b'{"choices":[],"tearline_expected_tokens":2}', ""),
        (b'{"choices":[{"index":0,"delta":{"content":"Hi"}}]}', ""),
        (b'{"choices":[{"index":0,"delta":{"content":" \xc3\xa9"}}]}', ""),
        (b'{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', ""),
        (b"[DONE]", ""),
    ]


def test_anthropic_frames_exactly() -> None:
    frames = list(iter_messages(TokenStreamSpec("anthropic", ("Hi",), advertise_length=True)))
    assert [(m.kind, m.data) for m in frames] == [
        (
            "message_start",
            b'{"type":"message_start","message":{"id":"msg_tearline","type":"message",'
            b'"role":"assistant","content":[]}}',
        ),
        ("ping", b'{"type":"ping","tearline_expected_tokens":1}'),
        (
            "content_block_start",
            b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
        ),
        (
            "content_block_delta",
            b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
        ),
        ("content_block_stop", b'{"type":"content_block_stop","index":0}'),
        (
            "message_delta",
            b'{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
            b'"usage":{"output_tokens":1}}',
        ),
        ("message_stop", b'{"type":"message_stop"}'),
    ]


def test_generic_frames_exactly() -> None:
    frames = list(iter_messages(TokenStreamSpec("generic", ("Hi", "🚀"), advertise_length=True)))
    assert [m.data for m in frames] == [
        b'{"expected_tokens":2}',
        b'{"token":"Hi"}',
        b'{"token":"\xf0\x9f\x9a\x80"}',
        b'{"done":true,"tokens":2}',
    ]
    assert {m.kind for m in frames} == {""}


OLLAMA_HEAD = b'{"model":"tearline","created_at":"2026-01-01T00:00:00Z","message":'


def test_ollama_frames_exactly() -> None:
    """``/api/chat``'s stream: a line per token, then the line with ``done`` and its reason."""
    spec = TokenStreamSpec("ollama", ("Hi", " é"), advertise_length=True, stop_reason="length")
    assert [(m.data, m.kind) for m in iter_messages(spec)] == [
        (
            OLLAMA_HEAD + b'{"role":"assistant","content":""},"done":false,'
            b'"tearline_expected_tokens":2}',
            "",
        ),
        (OLLAMA_HEAD + b'{"role":"assistant","content":"Hi"},"done":false}', ""),
        (OLLAMA_HEAD + b'{"role":"assistant","content":" \xc3\xa9"},"done":false}', ""),
        (
            OLLAMA_HEAD + b'{"role":"assistant","content":""},"done":true,'
            b'"done_reason":"length","eval_count":2}',
            "",
        ),
    ]


def test_a_token_limit_stop_is_an_explicit_end_whose_receipt_names_it() -> None:
    """Catalogue case 25, design decision 3: ``done_reason: length`` is COMPLETE_EXPLICIT (the
    stream is complete, the answer cut by the limit), never a cut stream; the receipt says so."""
    frames = list(iter_messages(TokenStreamSpec("ollama", TOKENS, stop_reason="length")))
    tracker = track("ollama", frames)
    assert tracker.received_tokens == 5
    assert tracker.completion_receipt is not None
    assert '"done_reason":"length"' in tracker.completion_receipt
    assert verdict(tracker, safe=False, accept=False) is V.COMPLETE_EXPLICIT


@pytest.mark.parametrize(
    ("profile", "reason"), [("openai", "length"), ("generic", "length"), ("ollama", "max")]
)
def test_only_ollama_writes_a_stop_reason(profile: str, reason: str) -> None:
    with pytest.raises(ValueError, match="stop reason"):
        TokenStreamSpec(profile, TOKENS, stop_reason=reason)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b'{"model":"m","message":{"role":"assistant","content":"a"}}', "MALFORMED_PAYLOAD"),
        (b'{"message":{"content":"a"},"done":"false"}', "MALFORMED_PAYLOAD"),
        (b'{"done":false}', "MALFORMED_PAYLOAD"),
        (b'{"message":"a","done":false}', "MALFORMED_PAYLOAD"),
        (b'{"message":{"content":1},"done":false}', "MALFORMED_PAYLOAD"),
        (b'{"message":{"content":""},"done":true}', "MALFORMED_PAYLOAD"),
        (b'{"message":{"content":""},"done":true,"done_reason":""}', "MALFORMED_PAYLOAD"),
        (b'{"message":{"content":""},"done":true,"done_reason":null}', "MALFORMED_PAYLOAD"),
        (b'{"error":"model \'x\' not found"}', "REMOTE_ERROR"),
        (b"[DONE]", "MALFORMED_PAYLOAD"),
    ],
)
def test_ollama_bad_frame(data: bytes, code: str) -> None:
    """No ``done``, a ``done`` that is no boolean, an end without a ``done_reason`` (it proves
    nothing), a message that is no object: malformed; an ``error`` line is the service's."""
    assert code_of("ollama", [Message(data)]) is ErrorCode(code)


def test_ollama_lines_without_text_are_not_tokens() -> None:
    """A tool call's line has empty content: not a token, and the stream goes on."""
    tool = b'{"message":{"role":"assistant","content":"","tool_calls":[{}]},"done":false}'
    frames = messages("ollama")
    tracker = track("ollama", [Message(tool), *frames])
    assert (tracker.received_tokens, tracker.completion_signal_present) == (5, True)


@pytest.mark.parametrize("profile", PROFILES)
def test_send_completion_false_drops_only_the_signal(profile: str) -> None:
    full, cut = messages(profile), messages(profile, send_completion=False)
    assert cut == full[:-1]


def test_default_tokens_are_deterministic_and_multibyte() -> None:
    assert default_tokens(30, 7) == default_tokens(30, 7)
    assert default_tokens(30, 7) != default_tokens(30, 8)
    assert default_tokens(0, 1) == ()
    for seed in range(12):
        tokens = default_tokens(8, seed)
        assert all(tokens)
        widths = {len(ch.encode()) for ch in "".join(tokens)}
        assert {2, 3, 4} <= widths, (seed, tokens)


@pytest.mark.parametrize(
    ("profile", "tokens"), [("gemini", ("a",)), ("openai", ("a", "")), ("openai", ("a", 1))]
)
def test_spec_rejects_nonsense(profile: str, tokens: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        TokenStreamSpec(profile, tokens)


def test_tracker_rejects_an_unknown_profile() -> None:
    with pytest.raises(ValueError):
        TokenTracker("gemini")


# --- tracker + guard, end to end --------------------------------------------------------------


RECEIPTS = {
    "openai": "openai: [DONE]",
    "anthropic": 'anthropic: {"type":"message_stop"}',
    "generic": 'generic: {"done":true,"tokens":5}',
    "ollama": 'ollama: {"model":"tearline","created_at":"2026-01-01T00:00:00Z",'
    '"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":5}',
    "openai-responses": "openai-responses: response.completed (sequence_number 12)",
}
#: the profiles whose frames carry no sequence number, so a frame repeated is judged by its
#: content (the Responses profile's repeats are SEQUENCE_BROKEN first: test_responses.py)
UNNUMBERED = ("openai", "anthropic", "generic")


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("advertise", [False, True])
def test_each_profile_end_to_end_is_complete_explicit(profile: str, advertise: bool) -> None:
    tracker = track(profile, messages(profile, advertise_length=advertise))
    assert tracker.text == "Hi café 🚀 流式."
    assert tracker.received_tokens == 5
    assert tracker.expected_length == (5 if advertise else None)
    assert tracker.completion_signal_present
    assert tracker.completion_receipt == RECEIPTS[profile]
    for safe in (False, True):
        for accept in (False, True):
            assert verdict(tracker, safe=safe, accept=accept) is V.COMPLETE_EXPLICIT
    assert tracker.recovery_predicate() == "NONE"


@pytest.mark.parametrize("profile", PROFILES)
def test_advertised_length_without_signal_is_complete_by_length(profile: str) -> None:
    tracker = track(profile, messages(profile, advertise_length=True, send_completion=False))
    assert not tracker.completion_signal_present
    assert tracker.completion_receipt is None
    assert tracker.state(terminal_safe=True) == StreamState(False, 5, 5, True)
    assert verdict(tracker, safe=False, accept=False) is V.COMPLETE_BY_LENGTH
    assert tracker.recovery_predicate() == "NONE"


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("advertise", [False, True])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_truncation_after_k_tokens(profile: str, advertise: bool, k: int) -> None:
    frames = messages(profile, advertise_length=advertise)
    tracker = track(profile, frames[: first_token_index(frames) + k])
    assert tracker.received_tokens == k
    assert tracker.text == "".join(TOKENS[:k])
    assert verdict(tracker, safe=True, accept=True) is V.PARTIAL_SAFE_BOUNDARY
    assert verdict(tracker, safe=True, accept=False) is V.PARTIAL_MID_TOKEN
    assert verdict(tracker, safe=False, accept=True) is V.PARTIAL_MID_TOKEN
    assert verdict(tracker, safe=False, accept=False) is V.PARTIAL_MID_TOKEN
    assert tracker.recovery_predicate() == "REFETCH_ALL"


def test_cut_inside_a_character_at_the_tail_is_mid_token() -> None:
    # design decision 4: invalid UTF-8 at the tail of a cut stream is PARTIAL_MID_TOKEN.
    frames = messages("openai")
    rocket = frames[2].data  # " 🚀"
    assert b"\xf0\x9f\x9a\x80" in rocket
    tail = rocket[: rocket.index(b"\xf0") + 2]
    tracker = track("openai", frames[:2])
    safe = classify_cut(tail) == "none"
    assert classify_cut(tail) == "utf8-char"
    assert verdict(tracker, safe=safe, accept=True) is V.PARTIAL_MID_TOKEN
    received = b"".join(m.data for m in frames[:2])
    assert tracker.partial_stream_hash(tail) == hashlib.sha256(received + tail).hexdigest()


def test_a_signal_short_of_the_advertised_length_is_refused() -> None:
    # A token dropped mid-stream, then [DONE]: the producer advertised 5 tokens, so a signal
    # after 4 proves nothing; the tracker refuses the stream before the guard could say
    # COMPLETE_EXPLICIT (seed 002's gate 1 would otherwise win over the length).
    frames = messages("openai", advertise_length=True)
    del frames[2]
    assert code_of("openai", frames) is ErrorCode.MALFORMED_PAYLOAD


def test_generic_signal_count_catches_a_dropped_token() -> None:
    frames = messages("generic")
    del frames[1]
    assert code_of("generic", frames) is ErrorCode.MALFORMED_PAYLOAD


def test_partial_stream_hash_is_over_the_frame_data_received() -> None:
    frames = messages("generic")
    tracker = track("generic", frames[:2])
    received = b'{"token":"Hi"}{"token":" caf\xc3\xa9"}'
    assert tracker.partial_stream_hash() == hashlib.sha256(received).hexdigest()
    assert tracker.partial_stream_hash() == (
        "7e3da3d44fb079d6a02c0cdd29fde9cdf598b6ef6c5ff56a6330b6a37df1e676"
    )
    assert TokenTracker("openai").partial_stream_hash() == hashlib.sha256(b"").hexdigest()


# --- tracker: bad frames with exact codes -----------------------------------------------------

MALFORMED = ErrorCode.MALFORMED_PAYLOAD
INVALID_UTF8 = ErrorCode.INVALID_UTF8
REMOTE = ErrorCode.REMOTE_ERROR


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"[DONE] junk", MALFORMED),  # not a prefix match (catalogue case 20)
        (b"[DONE]\n", MALFORMED),
        (b"", MALFORMED),
        (b"{", MALFORMED),
        (b"[]", MALFORMED),
        (b"{}", MALFORMED),
        (b'{"choices":{}}', MALFORMED),
        (b'{"choices":[1]}', MALFORMED),
        (b'{"choices":[{"index":0}]}', MALFORMED),
        (b'{"choices":[{"index":0,"delta":{"content":5}}]}', MALFORMED),
        (b'{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}', MALFORMED),
        (b'{"choices":[],"tearline_expected_tokens":-1}', MALFORMED),
        (b'{"choices":[],"tearline_expected_tokens":true}', MALFORMED),
        (b'{"choices":[],"tearline_expected_tokens":"5"}', MALFORMED),
        (b'{"error":{"message":"upstream died"}}', REMOTE),  # catalogue case 27
        (b'{"choices":[{"index":0,"delta":{"content":"caf\xc3"}}]}', INVALID_UTF8),
        (b'{"choices":[{"index":0,"delta":{"content":"\xff"}}]}', INVALID_UTF8),
        (b'{"choices":[{"index":0,"delta":{"content":"\\ud800"}}]}', INVALID_UTF8),
    ],
)
def test_openai_bad_frame(data: bytes, code: ErrorCode) -> None:
    assert code_of("openai", [Message(data)]) is code


@pytest.mark.parametrize(
    ("data", "kind", "code"),
    [
        (b'{"type":"message_start"}', "content_block_delta", MALFORMED),  # event/type disagree
        (b'{"type":"telemetry"}', "", MALFORMED),
        (b'{"index":0}', "", MALFORMED),
        (b'{"type":"content_block_delta","index":0}', "", MALFORMED),
        (
            b'{"type":"content_block_delta","index":0,'
            b'"delta":{"type":"input_json_delta","partial_json":"{"}}',
            "",
            MALFORMED,
        ),
        (b'{"type":"content_block_delta","delta":{"type":"text_delta","text":1}}', "", MALFORMED),
        (b'{"type":"ping","tearline_expected_tokens":null}', "ping", MALFORMED),
        (b"event: message_stop", "", MALFORMED),
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            "error",
            REMOTE,  # catalogue case 23
        ),
        (
            b'{"type":"content_block_delta","delta":{"type":"text_delta","text":"\xe6\x97"}}',
            "",
            INVALID_UTF8,
        ),
    ],
)
def test_anthropic_bad_frame(data: bytes, kind: str, code: ErrorCode) -> None:
    assert code_of("anthropic", [Message(data, kind)]) is code


@pytest.mark.parametrize(
    "data",
    [
        b'{"token":1}',
        b'{"token":"a","extra":1}',
        b'{"done":false,"tokens":0}',
        b'{"done":1,"tokens":0}',
        b'{"done":true}',
        b'{"expected_tokens":"3"}',
        b"{}",
        b'"token"',
        b"[DONE]",
    ],
)
def test_generic_bad_frame(data: bytes) -> None:
    assert code_of("generic", [Message(data)]) is MALFORMED


@pytest.mark.parametrize("profile", PROFILES)
def test_frame_after_the_signal(profile: str) -> None:
    frames = messages(profile)
    token = frames[first_token_index(frames)]
    assert code_of(profile, [*frames, token]) is MALFORMED
    assert code_of(profile, [*frames, frames[-1]]) is MALFORMED


@pytest.mark.parametrize("profile", UNNUMBERED)
def test_hint_must_come_once_before_any_token(profile: str) -> None:
    frames = messages(profile, advertise_length=True)
    hint = next(m for m in frames if b"expected_tokens" in m.data)
    first = first_token_index(frames)
    assert code_of(profile, [*frames[: first + 1], hint]) is MALFORMED
    assert code_of(profile, [*frames[:first], hint]) is MALFORMED


@pytest.mark.parametrize("profile", UNNUMBERED)
def test_more_tokens_than_advertised(profile: str) -> None:
    frames = messages(profile, advertise_length=True)
    first = first_token_index(frames)
    five = [*frames[:first], *[frames[first]] * 5]
    assert track(profile, five).received_tokens == 5  # as many as advertised: fine
    assert code_of(profile, [*five, frames[first]]) is MALFORMED


def test_errors_stick() -> None:
    tracker = TokenTracker("generic")
    with pytest.raises(CodecError):
        tracker.feed(Message(b"{"))
    with pytest.raises(CodecError) as again:
        tracker.feed(Message(b'{"token":"fine"}'))
    assert again.value.code is MALFORMED
    assert tracker.received_tokens == 0
    assert tracker.recovery_predicate() == "REFETCH_ALL"


def test_role_and_usage_chunks_are_not_tokens() -> None:
    frames = [
        Message(b'{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}'),
        Message(b'{"choices":[{"index":0,"delta":{"content":"a"}}]}'),
        Message(b'{"choices":[],"usage":{"completion_tokens":1}}'),
        Message(b"[DONE]"),
    ]
    tracker = track("openai", frames)
    assert (tracker.received_tokens, tracker.text) == (1, "a")


# --- classify_cut -----------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "🚀", "流"])
def test_cut_inside_each_multibyte_character(char: str) -> None:
    frame = json.dumps({"token": f"a{char}b"}, ensure_ascii=False).encode()
    start = frame.index(char.encode())
    for inside in range(1, len(char.encode())):
        assert classify_cut(frame[: start + inside]) == "utf8-char"
    assert classify_cut(frame[:start]) == "json-value"
    assert classify_cut(frame[: start + len(char.encode())]) == "json-value"


@pytest.mark.parametrize(
    ("partial", "where"),
    [
        (b"", "none"),
        (b"{", "json-value"),
        (b'{"token":"caf', "json-value"),
        (b'{"token":"cafe"', "json-value"),
        (b"[DON", "json-value"),
        (b"[DONE]", "frame"),
        (b'{"token":"cafe"}', "frame"),
        (b"\xff{", "invalid-utf8"),
        (b'{"token":"\xc3(', "invalid-utf8"),
        (b'{"token":"\xed\xa0', "invalid-utf8"),  # a surrogate is never valid UTF-8
        (b'{"token":"\xe0\x80', "invalid-utf8"),  # overlong
        (b'{"token":"\xf4\x90', "invalid-utf8"),  # above U+10FFFF
        (b'{"token":"\xc0', "invalid-utf8"),  # never a lead byte
        (b'{"token":"\xe0\xa0', "utf8-char"),  # valid so far
        (b'\xff{"token":"\xc3', "invalid-utf8"),  # garbage first decides
    ],
)
def test_classify_cut(partial: bytes, where: str) -> None:
    assert classify_cut(partial) == where


# --- Hypothesis -------------------------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
specs = st.builds(
    TokenStreamSpec,
    profile=st.sampled_from(PROFILES),
    tokens=st.lists(texts, max_size=8).map(tuple),
    advertise_length=st.booleans(),
    send_completion=st.booleans(),
)


@examples(150)
@given(spec=specs, data=st.data())
def test_no_prefix_without_the_signal_is_complete_explicit(
    spec: TokenStreamSpec, data: st.DataObject
) -> None:
    frames = list(iter_messages(spec))
    last = len(frames) - 1 if spec.send_completion else len(frames)
    keep = data.draw(st.integers(0, last))
    tracker = track(spec.profile, frames[:keep])
    assert tracker.text == "".join(spec.tokens[: tracker.received_tokens])
    for safe in (False, True):
        for accept in (False, True):
            got = verdict(tracker, safe=safe, accept=accept)
            assert got is not V.COMPLETE_EXPLICIT
            if got is V.COMPLETE_BY_LENGTH:
                assert spec.advertise_length
                assert tracker.received_tokens == len(spec.tokens)


@examples(100)
@given(spec=specs)
def test_whole_stream_round_trips_the_text(spec: TokenStreamSpec) -> None:
    tracker = track(spec.profile, list(iter_messages(spec)))
    assert tracker.text == "".join(spec.tokens)
    assert tracker.received_tokens == len(spec.tokens)
    assert tracker.completion_signal_present is spec.send_completion


@examples(150)
@given(spec=specs, data=st.data())
def test_every_proper_prefix_of_a_frame_is_a_cut(
    spec: TokenStreamSpec, data: st.DataObject
) -> None:
    frames = list(iter_messages(spec))
    assume(frames)
    frame = data.draw(st.sampled_from(frames)).data
    k = data.draw(st.integers(1, len(frame) - 1))
    try:
        frame[:k].decode()
        expected = "json-value"
    except UnicodeDecodeError:
        expected = "utf8-char"
    assert classify_cut(frame[:k]) == expected
    assert classify_cut(frame) == "frame"
