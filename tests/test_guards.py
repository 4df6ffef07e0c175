"""The two seed guards: every gate in order, exact verdicts, directives and digests.

Expected digests are computed here independently (hashlib + json, as the seeds write them) and
also pinned as literal hex, taken from running the seeds' own code: the digests are a public
contract, so a change to either formula must fail loudly.
"""

from __future__ import annotations

import hashlib
import json

from hypothesis import given
from hypothesis import strategies as st

from reference_impl.framing_guard import (
    FramingManifest,
    FramingPolicy,
    FramingVerdict,
    StreamFramingGuard,
)
from reference_impl.framing_guard import StreamState as FramingState
from reference_impl.partial_stream_guard import (
    PartialStreamGuard,
    PartialStreamVerdict,
    StreamManifest,
    StreamPolicy,
    StreamState,
)
from tests.wire import examples


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def frame(
    mode: str = "LENGTH_PREFIXED",
    buffer: str | None = "deadbeef",
    last: float = 100.0,
    size: int | None = 128,
    *,
    timeout: float = 30.0,
    now: float = 105.0,
) -> FramingManifest:
    return StreamFramingGuard.evaluate_stream(
        FramingState(mode, buffer, last, size), FramingPolicy(timeout, now)
    )


def partial(
    signal: bool = False,
    expected: int | None = 500,
    received: int = 100,
    safe: bool = False,
    *,
    accept: bool = False,
) -> StreamManifest:
    return PartialStreamGuard.evaluate_stream(
        StreamState(signal, expected, received, safe), StreamPolicy(accept)
    )


def in_progress_digest(buffer: str, age: str, expected: str) -> str:
    return sha(json.dumps({"buffer": buffer, "age": age, "expected": expected}, sort_keys=True))


# --- seed 000: framing guard ------------------------------------------------------------------


def test_gate1_unframed_discards() -> None:
    m = frame("UNFRAMED", "abc", 0.0, 10, now=1000.0)
    assert m.verdict is FramingVerdict.DISCARD_AND_RESET
    assert m.directive == "HALT: Unframed stream cannot be parsed reliably. Implement framing."
    assert m.manifest_digest == sha("UNFRAMED")
    assert m.manifest_digest == "23c432b939e24ff71e95b9822edd4819b66c0cf6454e801a1c390ad76abd6504"


def test_gate1_wins_over_every_other_gate() -> None:
    # No buffer, a stale buffer, a fresh buffer: UNFRAMED decides before any of them.
    for buffer, now in ((None, 105.0), ("", 105.0), ("deadbeef", 10_000.0), ("deadbeef", 101.0)):
        m = frame("UNFRAMED", buffer, now=now)
        assert m.verdict is FramingVerdict.DISCARD_AND_RESET
        assert m.manifest_digest == sha("UNFRAMED")


def test_gate2_no_partial_buffer_is_complete() -> None:
    m = frame("LENGTH_PREFIXED", None, 0.0, None, now=1000.0)
    assert m.verdict is FramingVerdict.MESSAGE_COMPLETE
    assert m.directive == "PROCEED: No partial buffer. Stream is at a clean message boundary."
    assert m.manifest_digest == sha("CLEAN")
    assert m.manifest_digest == "3e49dd16f3893026764455ec2610d4cabf5fb0e47c506543598c10a94bbca204"


def test_gate2_empty_hash_counts_as_no_buffer() -> None:
    # The seed tests ``not partial_buffer_hash``: "" is falsy, so it is a clean boundary even
    # when the last byte is ancient. Kept on purpose (the digests are a contract).
    m = frame("DELIMITED", "", 0.0, 64, now=1_000_000.0)
    assert m.verdict is FramingVerdict.MESSAGE_COMPLETE
    assert m.manifest_digest == sha("CLEAN")


def test_gate2_wins_over_timeout() -> None:
    m = frame("LENGTH_PREFIXED", None, 0.0, 128, timeout=1.0, now=500.0)
    assert m.verdict is FramingVerdict.MESSAGE_COMPLETE


def test_gate3_stale_buffer() -> None:
    m = frame(now=130.5)
    assert m.verdict is FramingVerdict.STALE_PARTIAL_BUFFER
    assert m.directive == "HALT: Partial buffer is 30.5s old, exceeding 30.0s timeout. Discard."
    assert m.manifest_digest == sha("STALE:30.5")
    assert m.manifest_digest == "a9bae423a0c3d75defe823c633c1cdbc98ddea1ff42b9fc86a0a92cbfcd80202"


def test_gate3_directive_prints_the_timeout_as_given() -> None:
    # The seed interpolates the timeout with plain str(): an int stays "5", a float is "5.0".
    assert frame(timeout=5, now=110.0).directive == (
        "HALT: Partial buffer is 10.0s old, exceeding 5s timeout. Discard."
    )
    assert frame(timeout=0.25, now=100.5).directive == (
        "HALT: Partial buffer is 0.5s old, exceeding 0.25s timeout. Discard."
    )


def test_gate3_age_equal_to_timeout_is_not_stale() -> None:
    # ``age > timeout`` is strict: exactly at the timeout the buffer is still in progress.
    m = frame(now=130.0)
    assert m.verdict is FramingVerdict.MESSAGE_IN_PROGRESS
    assert m.manifest_digest == in_progress_digest("deadbeef", "30.0", "128")
    assert m.manifest_digest == "7eb142f37e70288fe91837a00f6c64590b1e9bac205f368f7b5eb87948757fc8"
    assert frame(now=130.0001).verdict is FramingVerdict.STALE_PARTIAL_BUFFER


def test_gate4_in_progress_with_unknown_size() -> None:
    m = frame("DELIMITED", "deadbeef", 100.0, None, now=112.25)
    assert m.verdict is FramingVerdict.MESSAGE_IN_PROGRESS
    assert m.directive == "WAIT: Partial message in progress. Await remaining bytes."
    assert m.manifest_digest == in_progress_digest("deadbeef", "12.2", "UNKNOWN")
    assert m.manifest_digest == "cf847fb8c66cc0c3c49d5323690b6de03d11dd4972366f628528710d3b96df06"


def test_gate4_expected_size_zero_is_written_unknown() -> None:
    # Seed quirk kept on purpose: ``str(size) if size else "UNKNOWN"`` treats 0 as falsy, so an
    # announced size of 0 digests exactly like "no size announced".
    m = frame(size=0, now=105.0)
    assert m.verdict is FramingVerdict.MESSAGE_IN_PROGRESS
    assert m.manifest_digest == in_progress_digest("deadbeef", "5.0", "UNKNOWN")
    assert m.manifest_digest == frame(size=None, now=105.0).manifest_digest
    assert m.manifest_digest == "3f197bb046016bbb87501f0d736b696386f352186b31c9e366c4eb61567b55c6"


def test_gate4_digest_depends_on_buffer_age_and_size() -> None:
    base = frame(now=105.0).manifest_digest
    assert frame(buffer="cafe", now=105.0).manifest_digest != base
    assert frame(now=106.0).manifest_digest != base
    assert frame(size=129, now=105.0).manifest_digest != base


def test_gate4_clock_behind_last_byte_is_in_progress() -> None:
    # A negative age is never stale; the seed digests it as written.
    m = frame(now=95.0)
    assert m.verdict is FramingVerdict.MESSAGE_IN_PROGRESS
    assert m.manifest_digest == in_progress_digest("deadbeef", "-5.0", "128")


@examples(200)
@given(
    mode=st.sampled_from(["LENGTH_PREFIXED", "DELIMITED", "UNFRAMED", "OTHER"]),
    buffer=st.one_of(st.none(), st.text(max_size=8)),
    last=st.floats(-1e6, 1e6),
    size=st.one_of(st.none(), st.integers(0, 2**32)),
    timeout=st.floats(0, 1e3),
    now=st.floats(-1e6, 1e6),
)
def test_framing_digest_is_the_seed_formula(
    *, mode: str, buffer: str | None, last: float, size: int | None, timeout: float, now: float
) -> None:
    m = frame(mode, buffer, last, size, timeout=timeout, now=now)
    age = now - last
    if mode == "UNFRAMED":
        assert m.manifest_digest == sha("UNFRAMED")
    elif not buffer:
        assert m.manifest_digest == sha("CLEAN")
    elif age > timeout:
        assert m.manifest_digest == sha(f"STALE:{age:.1f}")
    else:
        expected = str(size) if size else "UNKNOWN"
        assert m.manifest_digest == in_progress_digest(buffer, f"{age:.1f}", expected)


# --- seed 002: partial-stream guard -----------------------------------------------------------


def test_gate1_explicit_completion() -> None:
    m = partial(signal=True, expected=500, received=100)
    assert m.verdict is PartialStreamVerdict.COMPLETE_EXPLICIT
    assert m.directive == "PROCEED: Stream complete with explicit signal."
    expected = sha(json.dumps({"received": "100", "completion": "EXPLICIT"}, sort_keys=True))
    assert m.manifest_digest == expected
    assert m.manifest_digest == "66565e6eec87007f32baf261d19d75de55f1d906a514db9f8598c79e7a51398f"


def test_gate1_completion_signal_wins_over_length() -> None:
    # Length matches and the signal is present: the signal decides (and its digest).
    m = partial(signal=True, expected=500, received=500, safe=True, accept=True)
    assert m.verdict is PartialStreamVerdict.COMPLETE_EXPLICIT
    assert m.manifest_digest == sha('{"completion": "EXPLICIT", "received": "500"}')


def test_gate2_complete_by_length() -> None:
    m = partial(expected=500, received=500)
    assert m.verdict is PartialStreamVerdict.COMPLETE_BY_LENGTH
    assert m.directive == "PROCEED: Stream length matches expected 500."
    expected = sha(
        json.dumps(
            {"received": "500", "expected": "500", "completion": "BY_LENGTH"}, sort_keys=True
        )
    )
    assert m.manifest_digest == expected
    assert m.manifest_digest == "31e31512ff44cb80a3515f18ee3304d4598d909a756279da2f3554ecbe640ab1"


def test_gate2_expected_zero_received_zero_matches() -> None:
    # ``is not None`` (not truthiness) in the seed: an advertised 0 is a real length.
    m = partial(expected=0, received=0)
    assert m.verdict is PartialStreamVerdict.COMPLETE_BY_LENGTH
    assert m.directive == "PROCEED: Stream length matches expected 0."
    assert m.manifest_digest == "4ca2c72fa4a54804ff634c8c10e28a4746fc6a7927f0bd509ae217a61c5a8196"


def test_gate2_wins_over_safe_boundary() -> None:
    m = partial(expected=7, received=7, safe=True, accept=True)
    assert m.verdict is PartialStreamVerdict.COMPLETE_BY_LENGTH


def test_gate2_needs_an_advertised_length() -> None:
    assert partial(expected=None, received=0).verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN
    assert partial(expected=10, received=11).verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN


def test_gate3_partial_at_safe_boundary() -> None:
    m = partial(expected=500, received=100, safe=True, accept=True)
    assert m.verdict is PartialStreamVerdict.PARTIAL_SAFE_BOUNDARY
    assert m.directive == (
        "PROCEED_WITH_CAUTION: Partial stream at safe boundary. Verify downstream."
    )
    expected = sha(json.dumps({"received": "100", "boundary": "SAFE"}, sort_keys=True))
    assert m.manifest_digest == expected
    assert m.manifest_digest == "d807326ba02f3bd47a51f9f2bfd45cd8ff2d4af5497750d19082df1aa0cbd6d5"


def test_gate3_needs_both_safe_boundary_and_policy() -> None:
    assert partial(safe=True, accept=False).verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN
    assert partial(safe=False, accept=True).verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN


def test_gate4_mid_token() -> None:
    m = partial(expected=500, received=100, safe=True, accept=False)
    assert m.verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN
    assert m.directive == "HALT: Stream truncated mid-token. Re-fetch or repair."
    assert m.manifest_digest == sha("MID_TOKEN:100")
    assert m.manifest_digest == "194b593e2900dcc87e352f87beb7eab8407995e33b26b288a724e1ab3a03d418"
    unknown = partial(expected=None, received=7, safe=False, accept=True).manifest_digest
    assert unknown == "87914b22de47696f16c8f04e0ec537d278e707eb892a0dad108fe643b8e215fc"


@examples(200)
@given(
    signal=st.booleans(),
    expected=st.one_of(st.none(), st.integers(0, 20)),
    received=st.integers(0, 20),
    safe=st.booleans(),
    accept=st.booleans(),
)
def test_partial_gates_in_order(
    signal: bool, expected: int | None, received: int, safe: bool, accept: bool
) -> None:
    verdict = partial(signal, expected, received, safe, accept=accept).verdict
    if signal:
        assert verdict is PartialStreamVerdict.COMPLETE_EXPLICIT
    elif expected == received:
        assert verdict is PartialStreamVerdict.COMPLETE_BY_LENGTH
    elif safe and accept:
        assert verdict is PartialStreamVerdict.PARTIAL_SAFE_BOUNDARY
    else:
        assert verdict is PartialStreamVerdict.PARTIAL_MID_TOKEN
