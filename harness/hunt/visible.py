"""Byte rewrites no consumer can detect, which the judge still holds every consumer to. Pure.

A ``corrupt`` or a ``bogus_length`` on the opaque ``messages`` payload can re-frame the stream
into other messages that the framing finds well formed: a blank line of an SSE event turned
into ``\\n\\x0b`` fuses two events into one; a length prefix of 0 makes an empty message of the
prefix and leaves the body to be read as the next prefix. Every correct consumer hands those
messages on (nothing in them is wrong), and the judge, which knows what the producer sent,
finds I1 broken: the reference consumer "fails" the plan, and so would any consumer. The judge
forgives only a change that keeps each message's size and place
(``harness.link.case_wire._unseen_changes``, the case ``tearline validate`` warns about).

Such a plan tests nothing and reads as a harness problem, so the hunt does not draw it:
``undetectable`` decodes the clean stream with the plan's rewrites applied, as the reference
codec does (``reference_impl.link.spec.decode_changed``), takes what the reference consumer would
hand on, forgives what the judge forgives, and asks whether I1 would still break.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError
from harness.faults.config import Fault
from harness.faults.effects import Effect
from harness.link.locator import PreparedLocator
from harness.link.prepared import PreparedLink
from reference_impl.errors import CodecError
from reference_impl.events import Message
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.spec import decode_changed
from reference_impl.payload.registry import payload

#: the payload whose consumer hands each message on as it completes, even from a stream that
#: fails later (the others refuse a failed stream whole: nothing is handed on)
STREAMED_PAYLOAD = "messages"


def rewrites(link: PreparedLink, faults: Sequence[Fault], connection: int) -> dict[int, int]:
    """``offset -> new byte`` of the downstream rewrites acting on ``connection`` that sit at
    a byte position of the clean stream (a time position is not known in advance)."""
    changes: dict[int, int] = {}
    locator = PreparedLocator(link)
    for fault in faults:
        if fault.direction != "downstream" or fault.connection not in (0, connection):
            continue
        try:
            changes.update(fault.byte_changes(locator, link.wire))
        except HarnessError:  # not placeable: the plan is rejected elsewhere
            continue
    return changes


def handed_on(link: PreparedLink, decoded: Sequence[Message], failed: bool) -> list[bytes]:
    """What the reference consumer hands on of ``decoded``: nothing of a stream its payload
    refuses; of a failed stream, only a streamed payload's messages."""
    if failed and link.spec.payload != STREAMED_PAYLOAD:
        return []
    spec = link.spec
    side = payload(spec.payload).side(
        ConsumerConfig(spec.framing, spec.payload, spec.tokens.profile, spec.options)
    )
    try:
        for message in decoded:
            side.feed(message)
    except CodecError:
        return []
    return [m.data for m in decoded]


def forgiven(sent: Sequence[bytes], delivered: Sequence[bytes]) -> list[bytes]:
    """``delivered`` as the judge reads it: a message changed in place, to one of the same
    size, counts as the one sent there."""
    return [
        sent[i] if i < len(sent) and len(sent[i]) == len(got) else got
        for i, got in enumerate(delivered)
    ]


def in_order(delivered: Sequence[bytes], sent: Sequence[bytes]) -> bool:
    """I1: every delivered message is one sent, in order, without repeats."""
    position = 0
    for message in delivered:
        try:
            position = sent.index(message, position) + 1
        except ValueError:
            return False
    return True


def undetectable(link: PreparedLink, faults: Sequence[Fault]) -> bool:
    """Whether the plan's byte rewrites make every correct consumer break I1 on some
    connection (see the module docstring)."""
    for connection in range(1, sum(f.reconnects for f in faults) + 2):
        changes = rewrites(link, faults, connection)
        if not changes:
            continue
        decoded, error = decode_changed(link.spec, changes)
        delivered = handed_on(link, decoded, error is not None)
        if any(Effect.CORRUPTION in f.effects for f in faults):  # the judge forgives only these
            delivered = forgiven(link.messages, delivered)
        if not in_order(delivered, link.messages):
            return True
    return False
