"""Changes no consumer can see (``harness.link.unseen``): a byte flipped inside an opaque
message is no consumer's fault; a change the framing or the payload checks is visible."""

from __future__ import annotations

import hashlib

from harness.faults import Corrupt
from harness.faults.position import Position
from harness.link.prepared import prepare
from harness.link.unseen import Unseen, case_warnings, unseen_changes
from harness.running.case import run_case
from reference_impl.link.spec import LinkSpec
from reference_impl.payload import envelope, messages
from tests.harness.conftest import one_case

OPAQUE = LinkSpec("length-prefixed", "messages", messages=messages.MessagesSpec(3, 24))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_byte_flipped_inside_an_opaque_message_is_unseen() -> None:
    link = prepare(OPAQUE)
    fault = Corrupt(at=Position(frame=2, frame_offset=10), mask=1)
    sent = link.messages[1]
    changed = sent[:6] + bytes([sent[6] ^ 1]) + sent[7:]  # 4 bytes of prefix, then the payload
    assert unseen_changes(link, [fault]) == (Unseen(0, "corrupt", 2, _sha(sent), _sha(changed)),)


def test_a_change_of_the_length_prefix_is_visible() -> None:
    link = prepare(OPAQUE)
    assert unseen_changes(link, [Corrupt(at=Position(frame=2, frame_offset=1))]) == ()


def test_a_change_the_envelope_checksum_covers_is_visible() -> None:
    spec = LinkSpec("length-prefixed", "envelope", envelope=envelope.EnvelopeSpec(4, 2))
    fault = Corrupt(at=Position(match="BLI-2"), count_bytes=1, value=ord("X"))
    link = prepare(spec)
    assert link.wire.find(b"BLI-2") > 0  # the change is placed (not skipped as impossible)
    assert unseen_changes(link, [fault]) == ()


def test_the_author_is_warned_once_per_scenario_and_message() -> None:
    link = prepare(OPAQUE)
    fault = Corrupt(at=Position(frame=2, frame_offset=10), mask=1)
    warnings = case_warnings([("s.yaml", 3, link, [fault]), ("s.yaml", 3, link, [fault])])
    (change,) = unseen_changes(link, [fault])
    assert warnings == [f"s.yaml:3: warning: {change.warning('messages')}"]


async def test_a_consumer_that_hands_on_the_changed_message_passes() -> None:
    case = one_case(
        """
name: opaque
description: a flipped byte inside message 2 reaches the consumer changed.
link: {framing: length-prefixed, payload: messages, messages: {count: 3, size_bytes: 24}}
faults:
  - {kind: corrupt, at: {frame: 2, frame_offset: 10}, mask: 1}
expect: {verdict: MESSAGE_COMPLETE, accepted_messages: 3}
"""
    )
    result = await run_case(case)
    i1 = next(check for check in result.checks if check.name == "I1")
    assert (result.outcome, i1.ok) == ("pass", True)
    assert i1.evidence == (
        "3 accepted messages all byte-identical and in order "
        "(1 as the fault changed them, which no consumer can see)"
    )
