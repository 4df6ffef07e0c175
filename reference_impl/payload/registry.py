"""The three payloads, by the names scenarios use: one table, like the framings'.

Each entry says where a ``LinkSpec`` keeps the payload's settings, how the producer makes its
messages, which leading messages carry the result (the rest only prove the end), and which
consumer-side check (``sides.py``) judges it. Adding a payload is one module under
``reference_impl/payload/`` and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reference_impl.errors import CodecError
from reference_impl.events import Message
from reference_impl.payload import PayloadName, envelope, messages, tokens
from reference_impl.payload.sides import EnvelopeSide, MessagesSide, PayloadSide, TokensSide


class SideSettings(Protocol):
    """What a consumer-side check is made from (``ConsumerConfig`` has it): the payload layer
    sits below the consumer's settings, so it names only the two fields it reads."""

    @property
    def token_profile(self) -> str: ...

    @property
    def accept_partial_at_safe_boundary(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class PayloadKind:
    name: PayloadName
    #: the ``LinkSpec`` attribute holding this payload's spec
    spec_field: str
    iter_messages: Callable[[Any], Iterator[Message]]
    #: how many leading messages of the stream carry the result
    content_count: Callable[[Any, Sequence[Message]], int]
    side: Callable[[SideSettings], PayloadSide]


def _all(spec: object, produced: Sequence[Message]) -> int:
    return len(produced)


def _tokens(spec: tokens.TokenStreamSpec, produced: Sequence[Message]) -> int:
    """A token stream's result is its tokens and tool calls: what follows the last of them
    (finish frame, completion signal) proves the end but adds no content, so a stream complete
    by its advertised length may lack it (seed 002 gate 2)."""
    count = 0
    tracker = tokens.TokenTracker(spec.profile)
    for index, message in enumerate(produced, start=1):
        before = tracker.content_frames
        try:
            tracker.feed(message)
        except CodecError:  # a stream its producer ends by saying so (length, error): no more
            break
        if tracker.content_frames > before:
            count = index
    return count


PAYLOADS: dict[str, PayloadKind] = {
    PayloadName.MESSAGES: PayloadKind(
        PayloadName.MESSAGES,
        "messages",
        messages.iter_messages,
        _all,
        lambda config: MessagesSide(),
    ),
    PayloadName.ENVELOPE: PayloadKind(
        PayloadName.ENVELOPE,
        "envelope",
        envelope.iter_messages,
        _all,
        lambda config: EnvelopeSide(),
    ),
    PayloadName.TOKENS: PayloadKind(
        PayloadName.TOKENS,
        "tokens",
        tokens.iter_messages,
        _tokens,
        lambda config: TokensSide(config.token_profile, config.accept_partial_at_safe_boundary),
    ),
}


def payload(name: str) -> PayloadKind:
    try:
        return PAYLOADS[name]
    except KeyError:
        raise ValueError(f"unknown payload {name!r}; known: {', '.join(PAYLOADS)}") from None
