"""Changes no consumer can see: a fault that rewrites bytes a link has no check for.

An opaque ``messages`` payload has no integrity check, and a token's text has none either: a
``corrupt`` fault that flips a byte inside such a message, leaving the framing intact, delivers
a different message that every correct consumer hands on. That is no I1 violation of the
consumer; the scenario author is warned, and the judge takes the changed message as the one the
link delivers.

Whether a change is visible is asked of the layers that know: the reference codec decodes the
changed stream (``reference_impl.link.spec.decode_changed``), and the payload's own check
(``reference_impl.payload.sides``) reads the messages it decoded. A change either of them
refuses is visible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

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


def may_go_unseen(fault: Fault) -> bool:
    """Whether a change ``fault`` makes can leave a message valid (only these are checked):
    it rewrites bytes of messages in place."""
    return Effect.CORRUPTION in fault.effects


@dataclass(frozen=True, slots=True)
class Unseen:
    """Message ``message`` (1-based) arrives changed by fault ``fault`` and nothing can tell."""

    fault: int
    kind: str
    message: int
    #: SHA-256 of the message as the producer sent it, and as it arrives
    sent: str
    delivered: str

    def warning(self, payload_name: str) -> str:
        return (
            f"faults[{self.fault}]: {self.kind} changes message {self.message} in a way no "
            f"consumer can detect (the {payload_name} payload has no integrity check there); "
            "the case is judged with that message delivered as changed"
        )


def unseen_changes(link: PreparedLink, faults: Sequence[Fault]) -> tuple[Unseen, ...]:
    """The changes of ``faults`` on the first connection that no consumer can see."""
    found: list[Unseen] = []
    for index, fault in enumerate(faults):
        first = fault.direction == "downstream" and fault.connection in (0, 1)
        if may_go_unseen(fault) and first:
            found += _unseen(link, index, fault)
    return tuple(found)


def _unseen(link: PreparedLink, index: int, fault: Fault) -> list[Unseen]:
    try:
        changes = fault.byte_changes(PreparedLocator(link), link.wire)
    except HarnessError:
        return []  # a position the stream does not have: the case is an error anyway
    if not changes:
        return []
    decoded, error = decode_changed(link.spec, changes)
    if error is not None or len(decoded) != len(link.messages):
        return []  # the framing shows it
    delivered = [m.data for m in decoded]
    if delivered == list(link.messages) or not _payload_accepts(link, decoded):
        return []
    return [
        Unseen(index, fault.kind, number, _sha(sent), _sha(got))
        for number, (sent, got) in enumerate(zip(link.messages, delivered, strict=True), 1)
        if sent != got
    ]


def _payload_accepts(link: PreparedLink, decoded: Sequence[Message]) -> bool:
    spec = link.spec
    config = ConsumerConfig(spec.framing, spec.payload, spec.tokens.profile, spec.options)
    side = payload(spec.payload).side(config)
    try:
        for message in decoded:
            side.feed(message)
    except CodecError:
        return False
    return True


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def case_warnings(cases: Sequence[tuple[str, int, PreparedLink, Sequence[Fault]]]) -> list[str]:
    """One ``file:line: warning: ...`` per scenario and message a fault changes unseen, for
    the author (``tearline validate`` and ``run`` print them); cases are ``(file, line, link,
    faults)``."""
    seen: dict[str, None] = {}
    for file, line, link, faults in cases:
        if not any(may_go_unseen(f) for f in faults):
            continue
        for change in unseen_changes(link, faults):
            seen[f"{file}:{line}: warning: {change.warning(link.spec.payload)}"] = None
    return list(seen)
