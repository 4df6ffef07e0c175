"""What a fault does to a stream's content, as a consumer could tell (pure).

Each fault class declares its ``effects``; the rest of the house asks them instead of naming
kinds: the judge (a fault that cut a connection), the live streams (a rewrite that may leave a
changed message valid, bytes no source sent), ``tearline hunt`` (which faults only a payload
that numbers its messages lets a consumer see). A fault that only moves bytes in time or
between reads (``split``, ``slice``, ``merge``, ``latency``, ``stall``, ``throttle``) has none:
every byte arrives, in order.
"""

from __future__ import annotations

from enum import StrEnum


class Effect(StrEnum):
    #: whole messages never arrive
    LOSS = "loss"
    #: a whole message arrives twice
    DUPLICATION = "duplication"
    #: whole messages arrive out of order
    REORDERING = "reordering"
    #: bytes of a message are changed in place (the message may still be a valid one)
    CORRUPTION = "corruption"
    #: the framing's own bytes are changed in place (a length field)
    REFRAMING = "reframing"
    #: bytes no source sent are added
    ADDITION = "addition"
    #: the connection ends before the stream does
    TRUNCATION = "truncation"


#: effects on whole messages, which only a payload that numbers its messages lets a consumer see
MESSAGE_ORDER = frozenset({Effect.LOSS, Effect.DUPLICATION, Effect.REORDERING})
#: effects that rewrite bytes where they stand, adding and removing none
REWRITES = frozenset({Effect.CORRUPTION, Effect.REFRAMING})
