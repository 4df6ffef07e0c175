"""What the reference consumer is told: its pure core's settings (``ConsumerConfig``) and what
its shell does beyond decoding (``ConsumerPolicy``). Defaults: ``reference_impl.defaults``."""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl import defaults
from reference_impl.framing.options import FramingOptions


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    framing: str
    payload: str = "messages"  # messages | envelope | tokens
    token_profile: str = defaults.TOKEN_PROFILE
    framing_options: FramingOptions = field(default_factory=FramingOptions)
    incomplete_message_timeout_s: float = defaults.INCOMPLETE_MESSAGE_TIMEOUT_S
    #: how long to wait at a message boundary for the next byte before calling the link dead
    idle_timeout_s: float = defaults.IDLE_TIMEOUT_S
    #: how long to wait for content (a message the payload counts as progress) whatever else
    #: arrives (heartbeats, pings, keep-alive events); None: no such limit
    content_idle_timeout_s: float | None = None
    accept_partial_at_safe_boundary: bool = False
    #: the producer continues a stream across reconnects (keep payload state) or restarts it
    resume: bool = False
    #: treat the link as unframed (seed 000 gate 1): the consumer refuses to parse it
    unframed: bool = False
    #: list every accepted message in the report (what a judge compares); False counts them
    #: only, so a stream of any length is consumed in O(1) memory
    list_accepted: bool = True


@dataclass(frozen=True, slots=True)
class ConsumerPolicy:
    """What the consumer's shell (``consumer.py``) does beyond decoding: how much it asks for
    per read, how often it reconnects, and seed 000's pause."""

    config: ConsumerConfig
    read_bytes: int = defaults.READ_BYTES
    max_reconnects: int = 0
    #: seed 000 pause: after this many messages, with a partial buffer, pause and hand over
    pause_at_message: int | None = None
    pause_ms: float = 0.0
    connect_timeout_s: float = 5.0
