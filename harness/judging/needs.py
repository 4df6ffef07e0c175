"""What a case's expectation needs the consumer to be given, derived from the case. Pure.

A consumer other than the reference one may lack what an expectation depends on: a client
library has no incomplete-message timeout, no read timeout at all, or no size limit, and a
client below the payload layer does not know the payload's own proof of end. Whether the
expectation depends on one of them is read off the case, never written by hand:

- ``incomplete_message_timeout``: the stream falls silent inside a message (a ``stall``, a
  ``slow_consumer``, a ``timeout``) for at least the case's incomplete-message timeout, before
  the payload proved its result, while bytes keep coming often enough that a read timeout
  never fires (heartbeats advance no message). Or the consumer pauses mid-message
  (``pause_at_message``) at least that long. Or, with a ``content_idle_timeout_ms``, no
  content comes for that long while heartbeats or pings do, wherever the stream is.
- ``idle_timeout``: the stream falls silent for at least the case's idle timeout without a
  byte (heartbeats count as bytes), before the payload proved its result: at a message
  boundary, or inside a message long enough for the incomplete-message timeout too (a plain
  read timeout then fires as well, and a client that has one is held to it).
- ``max_message_bytes``: a message of the stream is over the case's ``max_message_bytes``, or a
  ``bogus_length`` declares more than it that the rest of the stream can fill (a consumer
  without the limit would hand the following messages' bytes on as this one; one declaring
  more than is left only ends truncated, a failure such a consumer surfaces too).
- ``payload``: the case expects the whole result, the payload proves its end (an envelope's
  trailer, a token stream's signal) and every fault that breaks the stream sits after that
  proof (a cut after ``[DONE]``, junk after the last chunk): the result stands on the
  payload's proof alone, and refusing it is caution (``grades.py``).

Positions are read on the prepared link (the reference producer's clean stream): a case against
a producer tearline did not write, or a fault placed by time, says nothing of where it falls,
and is taken to need nothing there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.errors import HarnessError
from harness.faults import BogusLength
from harness.faults.config import Fault
from harness.faults.effects import Effect
from harness.faults.position import Position
from harness.link.locator import PreparedLocator
from harness.link.prepared import PreparedLink
from harness.link.reference import prepared_link
from harness.scenario.model import SUCCESS_VERDICTS, Expect, Scenario
from reference_impl.errors import CodecError
from reference_impl.framing import layout
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.spec import iter_payload
from reference_impl.payload.registry import payload
from reference_impl.payload.sides import Ending

Need = Literal["idle_timeout", "incomplete_message_timeout", "max_message_bytes", "payload"]
NEEDS: frozenset[str] = frozenset(
    {"idle_timeout", "incomplete_message_timeout", "max_message_bytes", "payload"}
)


@dataclass(frozen=True, slots=True)
class Silence:
    """The stream falls silent at ``offset`` of the clean stream: ``idle_ms`` without any byte,
    ``message_ms`` without a byte that advances a message (heartbeats are bytes, not
    progress); ``math.inf``: until the case ends."""

    offset: int
    idle_ms: float
    message_ms: float


def case_needs(scenario: Scenario) -> frozenset[str]:
    """What ``scenario``'s expectation needs the consumer to be given (see the module)."""
    needs = set(_settings_needs(scenario))
    prepared = _prepared(scenario)
    if prepared is not None:
        needs |= _stream_needs(scenario, prepared)
    return frozenset(needs)


def _prepared(scenario: Scenario) -> PreparedLink | None:
    """The clean stream the positions are read on; None when it is not the case's stream."""
    if scenario.link.producer.external:
        return None
    try:
        return prepared_link(scenario)
    except HarnessError:
        return None


def _settings_needs(scenario: Scenario) -> set[str]:
    link = scenario.link
    needs: set[str] = set()
    consumer = link.consumer
    paused = consumer.pause_at_message is not None
    if paused and consumer.pause_ms >= consumer.incomplete_message_timeout_ms:
        needs.add("incomplete_message_timeout")
    return needs


def _stream_needs(scenario: Scenario, prepared: PreparedLink) -> set[str]:
    link = scenario.link
    needs: set[str] = set()
    limit = link.framing_options.max_message_bytes
    if any(len(m) > limit for m in prepared.messages) or any(
        _takes_later_bytes(f, prepared, limit) for f in _downstream(scenario)
    ):
        needs.add("max_message_bytes")
    proof = proof_end(prepared, link.payload, _profile(scenario))
    cutoff = prepared.stream_length if proof is None else proof
    for silence in silences(scenario, prepared):
        if silence.offset >= cutoff + _after_end(scenario):
            continue  # after the proof (or the stream's own end): the result is decided
        idle = silence.idle_ms >= link.consumer.idle_timeout_ms
        if in_message(prepared, silence.offset):
            if silence.message_ms >= link.consumer.incomplete_message_timeout_ms:
                # a read timeout fires too when no byte at all comes for that long
                needs.add("idle_timeout" if idle else "incomplete_message_timeout")
        elif idle:
            needs.add("idle_timeout")
        content = link.consumer.content_idle_timeout_ms
        if content is not None and not idle and silence.message_ms >= content:
            # bytes keep coming (heartbeats, pings) and no content: a timer that they do not
            # reset, as the incomplete-message timer is not reset
            needs.add("incomplete_message_timeout")
    if proof is not None and proved_then_broken(scenario, prepared, proof):
        needs.add("payload")
    return needs


def _takes_later_bytes(fault: Fault, prepared: PreparedLink, limit: int) -> bool:
    """A ``bogus_length`` over the limit that the rest of the stream can fill: a consumer without
    the limit would take the following messages' bytes for this one's (one declaring more than
    is left only ends truncated, the failure surfaced either way)."""
    if not isinstance(fault, BogusLength) or fault.length <= limit:
        return False
    try:
        field = PreparedLocator(prepared).length_field(fault.frame)
    except HarnessError:
        return False
    return fault.length <= prepared.stream_length - (field[0] + field[1])


def _after_end(scenario: Scenario) -> int:
    """1 on a framing whose end is the close: a silence at the last byte holds the end back."""
    options = scenario.link.framing_options
    close = scenario.link.framing in ("length-prefixed", "ndjson") or (
        scenario.link.framing in ("sse", "ndjson-http") and options.sse_body == "close"
    )
    return 1 if close else 0


def _profile(scenario: Scenario) -> str:
    config = scenario.link.payload_config
    return str(getattr(config, "profile", "openai"))


@functools.lru_cache(maxsize=64)
def proof_end(prepared: PreparedLink, payload_name: str, profile: str) -> int | None:
    """Where on the clean stream the payload has proved its end (the offset at which its last
    proving message is handed on); None when the payload has no proof of its own (opaque
    messages end with the framing) or the stream never gives it."""
    if payload_name == "messages":
        return None
    spec = prepared.spec
    side = payload(payload_name).side(ConsumerConfig(spec.framing, payload_name, profile))
    for index, message in enumerate(iter_payload(spec)):
        if index >= len(prepared.spans):
            return None
        try:
            side.feed(message)
        except CodecError:  # the clean stream refused: no proof to stand on
            return None
        if side.finished(Ending("open", None, b"", None)):
            return layout.commit_end(spec.framing, spec.options, prepared.spans[index])
    return None


def proved_then_broken(scenario: Scenario, prepared: PreparedLink, proof: int) -> bool:
    """The case expects the whole result, and every fault that changes or ends the stream
    sits at or after the payload's proof (at least one does)."""
    if not expects_whole(scenario.expect):
        return False
    breaking = [f for f in _downstream(scenario) if not f.transparent]
    if not breaking:
        return False
    for fault in breaking:
        offset = fault_offset(fault, prepared)
        if offset is None or offset < proof:
            return False
    return True


def expects_whole(expect: Expect) -> bool:
    """The expectation is a complete result (a success verdict, complete, or both)."""
    verdicts = (expect.verdict,) if expect.verdict is not None else (expect.any_of or ())
    success = bool(verdicts) and set(verdicts) <= SUCCESS_VERDICTS
    return expect.complete is True or (success and expect.complete is not False)


def silences(scenario: Scenario, prepared: PreparedLink) -> list[Silence]:
    """Where the stream falls silent, before anything ends it."""
    found: list[Silence] = []
    first_end = _first_end(scenario, prepared)
    for fault in _downstream(scenario):
        silence = _silence(fault, prepared)
        if silence is not None and silence.offset <= first_end:
            found.append(silence)
    return found


def _first_end(scenario: Scenario, prepared: PreparedLink) -> float:
    # a fault that ends the connection where it sits: nothing comes after it
    ending = [f for f in _downstream(scenario) if Effect.TRUNCATION in f.effects]
    ends = [fault_offset(f, prepared) for f in ending]
    known = [e for e in ends if e is not None]
    return min(known, default=math.inf)


def _silence(fault: Fault, prepared: PreparedLink) -> Silence | None:
    """Where and how long ``fault`` holds the stream silent (the fault says how long)."""
    held = fault.silence()
    if held is None:
        return None
    offset = fault_offset(fault, prepared)
    return None if offset is None else Silence(offset, *held)


def fault_offset(fault: Fault, prepared: PreparedLink) -> int | None:
    """Where ``fault`` acts on the clean stream; None when that is not known before the case
    (a time position, a position the clean stream does not have)."""
    locator = PreparedLocator(prepared)
    try:
        at = getattr(fault, "at", None)
        if isinstance(at, Position):
            return None if at.after_ms is not None else locator.offset(at)
        frame = getattr(fault, "frame", None)
        if isinstance(frame, int):
            return locator.frame_span(frame)[0]
    except HarnessError:
        return None
    return 0


def in_message(prepared: PreparedLink, offset: int) -> bool:
    """Is ``offset`` of the clean stream inside a message (some of its bytes came, the message
    is not yet handed on)?"""
    spec = prepared.spec
    for span in prepared.spans:
        start = span[0]
        if start < offset < layout.commit_end(spec.framing, spec.options, span):
            return True
    return False


def _downstream(scenario: Scenario) -> Sequence[Fault]:
    return [f for f in scenario.faults if f.direction == "downstream"]
