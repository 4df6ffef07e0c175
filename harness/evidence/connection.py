"""What the wire showed of one connection's producer stream: the judge's evidence of what the
producer sent and whether the consumer got its end.

The proxy decodes every producer stream as it relays it (``harness/link/live.py``): before the
faults (what the producer sent) and after them (what the consumer's side received). The judge
reads only these facts, the same for tearline's producer and anyone else's: I1 and I3 compare
what the consumer accepted with ``sent``; I2 asks whether ``delivered_end`` came.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reference_impl.ledger import Past


@dataclass(frozen=True, slots=True)
class WireConnection:
    """One connection's producer stream as the proxy saw it."""

    number: int
    #: sha256 of each message the producer sent, in order, decoded before any fault (the
    #: first ``ledger.WINDOW``; the rest in ``sent_past``)
    sent: tuple[str, ...] = ()
    #: the messages a complete result must include (not those that only prove the end, like
    #: ``[DONE]``, nor a token stream's scaffolding, like a ``ping``), of those in ``sent``
    carrying: tuple[str, ...] = ()
    #: the messages the producer sent past ``sent``: a count and running hashes
    sent_past: Past = field(default_factory=Past)
    #: how many messages carry the result, past the window too (None: ``len(carrying)``),
    #: and how many leading messages of the stream hold them all
    carrying_count: int | None = None
    carrying_through: int = 0
    #: the producer reached its own end: the framing's end, its payload's completion proof,
    #: or a clean close where the framing has no end of its own
    producer_end: bool = False
    #: the consumer's side got that end too (decoded after the faults)
    delivered_end: bool = False
    #: whole messages the consumer's side could decode
    delivered: int = 0
    #: sha256 of each of them, in the order the consumer's side got them (what a fault no
    #: consumer can see left of ``sent``: the judge holds the consumer to this instead)
    received: tuple[str, ...] = ()
    #: (sent, delivered) digests of messages a fault changed into other valid messages of the
    #: same size, which no consumer can tell apart: accepting one is no I1 breach
    delivered_as: tuple[tuple[str, str], ...] = ()
    #: (sent, delivered) digests of messages a fault changed in place into other messages the
    #: framing still carries whole (same size, same place), on a stream the payload's own
    #: checks then refused (a flipped byte in an envelope record, a trailer's count): a client
    #: below the payload layer hands them on as the transport delivered them
    #: (``grades.transported_grade``)
    payload_changed: tuple[tuple[str, str], ...] = ()
    #: whole messages the consumer's side decoded after every message the producer sent (a
    #: fault inserted them after the end), on a stream the payload's own checks then refused
    #: (an event after ``[DONE]``): a client below the payload layer hands them on too
    payload_added: tuple[str, ...] = ()
    #: whole messages an ``inject_event`` fault wrote between the producer's (a ping, an
    #: error event): not the producer's, so accepting one is no I1 breach (nor is accepting a
    #: message of the same bytes the producer sent: a ping is a ping)
    injected: tuple[str, ...] = ()
    #: the producer's stream broke its framing before its first message (a foreign producer
    #: that does not speak the declared framing: an HTML error page where SSE was declared)
    setup_problem: str = ""
    #: a message went past the largest the proxy decodes (the link's limit): what the
    #: producer sent after it is not known (``LiveStream.over_limit``)
    over_limit: str = ""
    #: bytes the producer sent on this connection, and how its side ended ("eof", "rst";
    #: None: still open when the case ended)
    sent_bytes: int = 0
    producer_closed: str | None = None
    #: that problem is the service answering the request with an error status (404, 405):
    #: it speaks the framing, and refused what the consumer asked for
    refused: bool = False


def needed_messages(wire: Sequence[WireConnection], last: int, *, resumes: bool) -> list[str]:
    """Digests a complete result must include: the messages that carry the result on
    connection ``last``, or on every connection up to it when the producer resumes across
    reconnects."""
    chosen = (
        [c for c in wire if c.number <= last] if resumes else [c for c in wire if c.number == last]
    )
    return [digest for c in chosen for digest in c.carrying]


def connection(wire: Sequence[WireConnection], number: int) -> WireConnection | None:
    return next((c for c in wire if c.number == number), None)
