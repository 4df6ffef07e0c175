"""The envelope's and the token stream's verdicts never depend on how the reads fall.

A payload stream (clean, or with a fault: a frame dropped, repeated, swapped, corrupted or
replaced, the stream cut short, the framing's end missing) goes over each of the five framings
into the consumer's pure core (``ConsumerSession``), read whole, one byte at a time and cut at
random offsets. The three must reach the same ``Verdict`` (the payload's decision, what was
handed on, the recorded payload elements). Clean streams must also verify exactly, and a few
error-carrying streams have their exact verdicts pinned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.events import Message
from reference_impl.framing import FRAMING_NAMES, FramingOptions
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.session import ConsumerSession
from reference_impl.payload import envelope, tokens
from reference_impl.report import ConsumerReport
from tests.wire import bytewise, examples, produce_wire, split_at

WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 section 1.3's sample
#: replacement bytes every framing carries (ASCII, no CR or LF), most of them JSON syntax
SAFE_BYTES = b'x0"{}:,[]\\'
FAULTS = ["none", "drop", "repeat", "swap", "corrupt", "garbage", "in-band-error", "cut"]


@pytest.fixture(autouse=True, scope="module")
def _pinned_nonce() -> Iterator[None]:
    """Recorded WebSocket wires answer one key; every fresh client here must send that one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("wsproto.handshake.generate_nonce", lambda: WS_KEY)
        yield


@dataclass(frozen=True, slots=True)
class Stream:
    """A payload's messages, what the consumer is told about it, and how the stream ends."""

    framing: str
    payload: str  # envelope | tokens (| messages, below)
    messages: tuple[Message, ...]
    profile: str = "generic"
    accept_partial: bool = False
    end: bool = True  # the framing's own explicit end is sent
    cut: int | None = None  # the wire is cut after this many bytes
    how: str = "eof"  # eof | rst
    cuts: tuple[int, ...] = ()  # where the third reading splits the wire


def wire_of(stream: Stream) -> bytes:
    _, wire = produce_wire(stream.framing, stream.messages, end=stream.end)
    return wire if stream.cut is None else wire[: stream.cut]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the payload decided, from a report: the parts that must not depend on the reads.

    Left out: read counts, bytes read and their hash, and the framing's state when the
    verdict fell (partial buffer, seed 000 verdict and digest): the consumer stops reading at
    its verdict, inside the read that brought it, so those say where that read ended. Text is
    left out too: codes are the contract.
    """

    verdict: str
    complete: bool
    error_code: str | None
    accepted: tuple[str, ...]
    ends: tuple[tuple[str, str | None], ...]
    completion_receipt: str | None
    length_hint: int | None
    recovery_predicate: str | None

    @classmethod
    def of(cls, report: ConsumerReport) -> Verdict:
        recorded = report.recorded
        return cls(
            report.verdict,
            report.complete,
            report.error_code,
            tuple(a.sha256 for a in report.accepted),
            tuple((c.end, c.error_code) for c in report.connections),
            recorded.stream_completion_signal_receipt,
            recorded.expected_stream_length_hint,
            recorded.stream_recovery_predicate,
        )


def consume(stream: Stream, pieces: Sequence[bytes]) -> Verdict:
    """The verdict of a fresh consumer that read ``pieces``, then saw the connection end."""
    config = ConsumerConfig(
        stream.framing,
        stream.payload,
        stream.profile,
        FramingOptions(),
        accept_partial_at_safe_boundary=stream.accept_partial,
    )
    session = ConsumerSession(config)
    session.connect(0.0)
    for piece in pieces:
        if session.done:
            break  # the consumer stops reading at its verdict
        session.receive(piece, 0.0)
    session.end_of_stream(stream.how, 0.0)
    return Verdict.of(session.report())


def check_any_reads(stream: Stream) -> Verdict:
    """Whole, bytewise and cut at ``stream.cuts`` give one verdict; return it."""
    wire = wire_of(stream)
    whole = consume(stream, [wire])
    assert consume(stream, bytewise(wire)) == whole
    assert consume(stream, split_at(wire, stream.cuts)) == whole
    return whole


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- streams ----------------------------------------------------------------------------------

envelope_specs = st.builds(
    envelope.EnvelopeSpec, records=st.integers(0, 6), chunk_records=st.integers(1, 3)
)
token_specs = st.builds(
    tokens.TokenStreamSpec,
    profile=st.sampled_from(tokens.PROFILES),
    tokens=st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=4), max_size=6).map(
        tuple
    ),
    advertise_length=st.booleans(),
)
#: frames a producer might send that its profile (or the envelope) does not expect
GARBAGE = [
    Message(b"{}"),
    Message(b"[DONE]"),
    Message(b"not json"),
    Message(b'{"token":"x","extra":1}'),
    Message(b'{"frame_type":"chunk","sequence":1,"records":[]}'),
    Message(tokens.DONE + b" junk"),
]
IN_BAND_ERRORS = [
    Message(b'{"error":{"message":"overloaded"}}'),
    Message(b'{"type":"error","error":{"type":"overloaded_error"}}', "error"),
]


@st.composite
def faulty(draw: st.DrawFn, messages: list[Message]) -> list[Message]:
    """``messages`` with one fault, or none."""
    fault = draw(st.sampled_from(FAULTS))
    if not messages or fault == "none":
        return messages
    i = draw(st.integers(0, len(messages) - 1))
    j = draw(st.integers(0, len(messages) - 1))
    if fault == "drop":
        return messages[:i] + messages[i + 1 :]
    if fault == "repeat":
        return messages[: i + 1] + messages[i:]
    if fault == "swap":
        swapped = list(messages)
        swapped[i], swapped[j] = messages[j], messages[i]
        return swapped
    if fault == "corrupt":
        return [*messages[:i], corrupted(draw, messages[i]), *messages[i + 1 :]]
    if fault == "cut":
        return messages[:i]
    extra = draw(st.sampled_from(GARBAGE if fault == "garbage" else IN_BAND_ERRORS))
    return [*messages[:i], extra, *messages[i:]]


def corrupted(draw: st.DrawFn, message: Message) -> Message:
    """One ASCII byte of ``message`` replaced by another every framing carries (a byte of a
    multi-byte character would make it invalid UTF-8, which SSE cannot even send)."""
    data = bytearray(message.data)
    ascii_at = [i for i, byte in enumerate(data) if byte < 0x80]
    if ascii_at:
        data[draw(st.sampled_from(ascii_at))] = draw(st.sampled_from(SAFE_BYTES))
    return replace(message, data=bytes(data))


@st.composite
def payload_streams(draw: st.DrawFn, framing: str, payload: str) -> Stream:
    """A stream of ``payload`` over ``framing``, with a fault maybe, cut short maybe."""
    if payload == "envelope":
        clean, profile = list(envelope.iter_messages(draw(envelope_specs))), "generic"
    else:
        spec = draw(token_specs)
        clean, profile = list(tokens.iter_messages(spec)), spec.profile
    messages = tuple(draw(faulty(clean)))
    accept = draw(st.booleans())
    stream = Stream(framing, payload, messages, profile, accept, draw(st.booleans()))
    size = len(wire_of(stream))
    if draw(st.integers(0, 3)) == 0:
        stream = replace(stream, cut=draw(st.integers(0, size)))
    how = draw(st.sampled_from(["eof", "eof", "rst"]))
    return replace(stream, how=how, cuts=tuple(draw(st.lists(st.integers(0, size), max_size=6))))


@st.composite
def any_payload_stream(draw: st.DrawFn) -> Stream:
    framing = draw(st.sampled_from(FRAMING_NAMES))
    return draw(payload_streams(framing, draw(st.sampled_from(["envelope", "tokens"]))))


@examples(200)
@given(stream=any_payload_stream())
def test_a_payload_verdict_does_not_depend_on_the_reads(stream: Stream) -> None:
    check_any_reads(stream)


# --- clean streams verify exactly, however they are read -------------------------------------


@pytest.mark.parametrize("framing", FRAMING_NAMES)
@examples(20)
@given(spec=envelope_specs, cuts=st.lists(st.integers(0, 3000), max_size=8))
def test_a_clean_envelope_verifies_under_any_reads(
    framing: str, spec: envelope.EnvelopeSpec, cuts: list[int]
) -> None:
    messages = tuple(envelope.iter_messages(spec))
    report = check_any_reads(Stream(framing, "envelope", messages, cuts=tuple(cuts)))
    assert (report.verdict, report.complete, report.error_code) == ("RESULT_VERIFIED", True, None)
    assert report.accepted == tuple(sha(m.data) for m in messages)
    assert (report.recovery_predicate, report.length_hint) == ("NONE", spec.records)


@pytest.mark.parametrize("framing", FRAMING_NAMES)
@examples(20)
@given(spec=token_specs, cuts=st.lists(st.integers(0, 3000), max_size=8))
def test_a_clean_token_stream_is_complete_under_any_reads(
    framing: str, spec: tokens.TokenStreamSpec, cuts: list[int]
) -> None:
    messages = tuple(tokens.iter_messages(spec))
    stream = Stream(framing, "tokens", messages, spec.profile, cuts=tuple(cuts))
    report = check_any_reads(stream)
    assert (report.verdict, report.complete, report.error_code) == ("COMPLETE_EXPLICIT", True, None)
    assert report.accepted == tuple(sha(m.data) for m in messages)
    assert report.length_hint == (len(spec.tokens) if spec.advertise_length else None)
    signal = messages[-1].data.decode()
    if spec.profile == "openai-responses":  # its signal repeats the whole output: named instead
        signal = f"response.completed (sequence_number {len(messages) - 1})"
    assert report.completion_receipt == f"{spec.profile}: {signal}"


# --- error-carrying streams: the exact verdicts ---------------------------------------------

ENVELOPE = list(envelope.iter_messages(envelope.EnvelopeSpec(4, 2)))  # header, 2 chunks, trailer
TOKENS = list(tokens.iter_messages(tokens.TokenStreamSpec("openai", ("a", "b"))))  # +finish, DONE
TRUNCATED, MISMATCH = "ERR_ZPARQL_STREAM_TRUNCATED", "ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH"


def _trailer_counting(total: int) -> Message:
    trailer = json.loads(ENVELOPE[-1].data)
    trailer["total_records"] = total
    return Message(envelope.encode_frame(trailer))


def _stream(payload: str, messages: list[Message], end: bool = True, how: str = "eof") -> Stream:
    """A stream for every framing (set later); token streams are openai's."""
    profile = "openai" if payload == "tokens" else "generic"
    return Stream("", payload, tuple(messages), profile, end=end, how=how)


ERROR_STREAMS = [
    pytest.param(_stream("envelope", ENVELOPE[:-1]), (TRUNCATED, 0), id="no-trailer"),
    pytest.param(_stream("envelope", ENVELOPE[::2]), (MISMATCH, 0), id="chunk-dropped"),
    pytest.param(
        _stream("envelope", [*ENVELOPE[:-1], _trailer_counting(3)]), (MISMATCH, 0), id="count"
    ),
    pytest.param(
        _stream("envelope", ENVELOPE, end=False, how="rst"), ("RESULT_VERIFIED", 4), id="rst-late"
    ),
    pytest.param(_stream("tokens", TOKENS[:-1]), ("PARTIAL_MID_TOKEN", 0), id="no-signal"),
    pytest.param(
        _stream("tokens", [TOKENS[0], IN_BAND_ERRORS[0], *TOKENS[1:]]),
        ("PARTIAL_MID_TOKEN", 0),
        id="in-band-error",
    ),
    pytest.param(
        _stream("tokens", [*TOKENS, TOKENS[0]]), ("PARTIAL_MID_TOKEN", 0), id="after-signal"
    ),
    pytest.param(
        _stream("tokens", TOKENS, end=False, how="rst"), ("COMPLETE_EXPLICIT", 4), id="rst-late"
    ),
]


@pytest.mark.parametrize("framing", FRAMING_NAMES)
@pytest.mark.parametrize(("stream", "expected"), ERROR_STREAMS)
def test_error_carrying_streams_give_the_exact_verdict_under_any_reads(
    framing: str, stream: Stream, expected: tuple[str, int]
) -> None:
    report = check_any_reads(replace(stream, framing=framing))
    assert (report.verdict, len(report.accepted)) == expected


# --- read dependence that once came from the session -------------------------------------------
# Both came from ConsumerSession (reference_impl/link/session.py) judging a verdict with the
# codec as it stood after the whole read, including bytes that arrived after the frame that decided.


def test_an_in_band_error_boundary_is_safe_whatever_the_reads() -> None:
    # openai in-band error, partial results accepted at a safe boundary, and one byte of the
    # next frame in the same read: it once was PARTIAL_MID_TOKEN read whole and
    # PARTIAL_SAFE_BOUNDARY bytewise. A payload's refusal is judged at the message it refused.
    messages = (IN_BAND_ERRORS[0], *TOKENS[-2:])
    stream = Stream("length-prefixed", "tokens", messages, "openai", True, False, cut=39)
    assert check_any_reads(stream).verdict == "PARTIAL_SAFE_BOUNDARY"


def test_a_framing_error_verdict_does_not_depend_on_the_reads() -> None:
    # A bogus length after one message: it once was DISCARD_AND_RESET read whole and
    # STALE_PARTIAL_BUFFER bytewise (the codec had buffered the bad header, so a message looked
    # in flight). A codec's refusal is seed 000 gate 1 now, whatever it had buffered.
    stream = Stream("length-prefixed", "messages", (Message(b"a"),), end=False)
    wire = wire_of(stream) + b"\xff\xff\xff\xff"
    assert consume(stream, [wire]) == consume(stream, bytewise(wire))
