"""What a consumer of each payload can see of a fault, given what the protocol carries. Pure.

A consumer can only refuse what its protocol lets it notice. A message lost, repeated or swapped
is visible only where the messages are numbered (the envelope's ``sequence``) or counted (a
done signal that states the count, a length hint); a changed byte only where something checks
the bytes (the envelope's checksum). Where nothing does, every consumer, the perfect one
included, hands on what arrived: that is a property of the protocol, not a defect of the
consumer.

This module is the one declaration of it: ``tearline validate`` warns for each fault whose
effect the link's payload cannot see, the judge does not hold a consumer to such a fault, hunt
draws no plan of one, and ``docs/detectability.md`` is this table (a test compares them).

The changes are named as the faults' effects are (``harness.faults.effects.Effect``, whose
values these are; this layer sits below the faults). They are about the messages that carry
the result: a lost or repeated terminal event is the end gone missing or a message after the
end, which every payload here detects (``TRUNCATION``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from reference_impl.events import Message
from reference_impl.payload import PayloadName
from reference_impl.payload.tokens import PROFILES, TokenStreamSpec, TokenTracker


class Change(StrEnum):
    """A change to a stream's messages a fault can make (a subset of the faults' effects)."""

    LOSS = "loss"
    DUPLICATION = "duplication"
    REORDERING = "reordering"
    CORRUPTION = "corruption"
    TRUNCATION = "truncation"


@dataclass(frozen=True, slots=True)
class Detection:
    """What one payload (profile, settings) carries, and for each change whether a perfect
    consumer sees it: ``seen`` says how, ``unseen`` why not (every change is in one)."""

    name: str
    carries: str
    seen: tuple[tuple[Change, str], ...]
    unseen: tuple[tuple[Change, str], ...]

    def detects(self, change: str) -> bool:
        return all(c != change for c, _ in self.unseen)

    def why_unseen(self, change: str) -> str | None:
        """Why no consumer of this payload can see ``change`` (None: it can)."""
        return next((why for c, why in self.unseen if c == change), None)


_TEXT = "nothing checks a token's text (a change that breaks the JSON is seen)"


def _tokens(profile: str, hint: bool, completion: bool = True) -> Detection:
    signal = {
        "generic": 'a done signal that counts the tokens ({"done":true,"tokens":N})',
        "openai": 'a finish chunk and "data: [DONE]"',
        "anthropic": "typed events from message_start to message_stop",
        "ollama": 'a last line with "done":true and its done_reason',
        "openai-responses": "typed events, each with its sequence_number, to response.completed",
    }[profile]
    if profile == "openai-responses":  # every event is numbered: the reader checks the order
        return _numbered(profile, signal, hint)
    # a generic stream counts its tokens in its completion signal (when it sends one)
    counted = hint or (profile == "generic" and completion)
    counter = "the advertised length" if hint else "the done signal's count"
    carries = signal + (", a length hint" if hint else "")
    name = f"tokens ({profile}{', advertise_length' if hint else ''})"
    seen = [(Change.TRUNCATION, "the stream ends before its completion signal")]
    unseen = [
        (Change.REORDERING, "nothing numbers the deltas: swapped ones still add up"),
        (Change.CORRUPTION, _TEXT),
    ]
    if counted:
        seen += [
            (Change.LOSS, f"one token too few for {counter}"),
            (Change.DUPLICATION, f"one token too many for {counter}"),
        ]
    else:
        unseen[:0] = [
            (Change.LOSS, "nothing numbers or counts the deltas"),
            (Change.DUPLICATION, "nothing numbers or counts the deltas"),
        ]
    return Detection(name, carries, tuple(seen), tuple(unseen))


def _numbered(profile: str, signal: str, hint: bool) -> Detection:
    """A token stream whose every event carries the next sequence number."""
    why = "the sequence_number is not the next one"
    seen = (
        (Change.LOSS, f"{why} (a gap)"),
        (Change.DUPLICATION, f"{why} (one repeated)"),
        (Change.REORDERING, f"{why} (out of order)"),
        (Change.TRUNCATION, "the stream ends before its completion signal"),
    )
    name = f"tokens ({profile}{', advertise_length' if hint else ''})"
    carries = signal + (", a length hint" if hint else "")
    return Detection(name, carries, seen, ((Change.CORRUPTION, _TEXT),))


MESSAGES = Detection(
    "messages",
    "opaque messages; only the framing's own end",
    seen=(
        (
            Change.TRUNCATION,
            "a cut inside a message, or before the framing's own end where it has one",
        ),
    ),
    unseen=(
        (Change.LOSS, "nothing numbers the messages"),
        (Change.DUPLICATION, "nothing numbers the messages"),
        (Change.REORDERING, "nothing numbers the messages"),
        (Change.CORRUPTION, "nothing checks a message's bytes"),
    ),
)

ENVELOPE = Detection(
    "envelope",
    "a header, chunk sequence numbers, a trailer with the record count, a checksum and an "
    "end token",
    seen=(
        (Change.LOSS, "a gap in the chunk sequence"),
        (Change.DUPLICATION, "a chunk sequence number again"),
        (Change.REORDERING, "chunk sequence numbers out of order"),
        (Change.CORRUPTION, "the trailer's checksum and count (or a frame that does not parse)"),
        (Change.TRUNCATION, "no trailer with the end token"),
    ),
    unseen=(),
)


def detection(payload: str, tokens: TokenStreamSpec | None = None) -> Detection:
    """The declaration for a link's payload; ``tokens``: its token stream's settings."""
    if payload == PayloadName.MESSAGES:
        return MESSAGES
    if payload == PayloadName.ENVELOPE:
        return ENVELOPE
    if payload == PayloadName.TOKENS and tokens is not None:
        return _tokens(tokens.profile, tokens.advertise_length, tokens.send_completion)
    raise ValueError(f"no detection declared for payload {payload!r}")


def content_frames(
    payload: str, frames: Iterable[Message], tokens: TokenStreamSpec | None = None
) -> frozenset[int]:
    """The frames (1-based) of a clean stream that the declaration speaks of: those that
    carry the result's content. Every message of ``messages`` and ``envelope``; a token
    stream's deltas only: its start, hint, finish and completion signal are scaffolding whose
    loss or repetition every profile sees (an end that never comes, a frame past the end, a
    stream that does not start as it must)."""
    if payload != PayloadName.TOKENS or tokens is None:
        return frozenset(index for index, _ in enumerate(frames, start=1))
    tracker, found = TokenTracker(tokens.profile), set()
    for index, frame in enumerate(frames, start=1):
        before = tracker.received_tokens
        tracker.feed(frame)
        if tracker.received_tokens > before:
            found.add(index)
    return frozenset(found)


def every_detection() -> tuple[Detection, ...]:
    """Every payload, profile and setting that changes what is seen: the table's rows (a
    token stream that sends no completion signal sees what its profile without a length hint
    sees)."""
    rows = [MESSAGES, ENVELOPE]
    rows += [_tokens(profile, hint) for profile in PROFILES for hint in (False, True)]
    return tuple(rows)


def table() -> str:
    """The declaration as a Markdown table (``docs/detectability.md`` holds it verbatim)."""
    changes = tuple(Change)
    lines = [
        "| payload | carries | " + " | ".join(changes) + " |",
        "| --- | --- | " + " | ".join("---" for _ in changes) + " |",
    ]
    for row in every_detection():
        how = dict(row.seen)
        cells = [
            f"seen: {how[c]}" if c in how else f"**unseen**: {row.why_unseen(c)}" for c in changes
        ]
        lines.append(f"| {row.name} | {row.carries} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
