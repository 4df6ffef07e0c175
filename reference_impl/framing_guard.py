"""Seed 000's framing guard: commit, wait for more bytes, or throw the partial buffer away.

A receiver that paused in the middle of a message asks this guard what to do with the bytes it
holds. The gates run in the seed's order and the first that applies decides:

1. ``UNFRAMED`` stream: nothing can be parsed reliably -> ``DISCARD_AND_RESET``.
2. no partial buffer (no ``partial_buffer_state_hash``) -> ``MESSAGE_COMPLETE``.
3. the last byte is older than ``incomplete_message_timeout`` -> ``STALE_PARTIAL_BUFFER``.
4. otherwise -> ``MESSAGE_IN_PROGRESS``.

This is the seed's code with types added. Gate order, directive strings and manifest digest
formulas are kept byte for byte, including two quirks, because the digests are a public contract
that reports and other implementations compare:

- gate 2 tests the hash for truthiness, so an empty string counts as "no partial buffer";
- gate 4 tests ``expected_size`` for truthiness, so a size of 0 is written ``"UNKNOWN"``.

Pure: no I/O, no clock (the caller passes ``current_epoch`` in the policy).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import Enum, auto

#: The framing modes the seed names. The guard only singles out ``UNFRAMED``; like the seed, it
#: treats any other string as framed.
FRAMING_MODES: tuple[str, ...] = ("LENGTH_PREFIXED", "DELIMITED", "UNFRAMED")


class FramingVerdict(Enum):
    """What the receiver must do with its partial buffer."""

    MESSAGE_COMPLETE = auto()
    MESSAGE_IN_PROGRESS = auto()
    STALE_PARTIAL_BUFFER = auto()
    DISCARD_AND_RESET = auto()


@dataclass(frozen=True)
class StreamState:
    """The receiver's position in the stream when it paused.

    ``partial_buffer_hash`` is the seed's ``partial_buffer_state_hash`` (None or ``""`` when the
    receiver stands at a message boundary); ``last_byte_epoch`` is when the last byte arrived (s);
    ``expected_size`` is the length-prefixed size of the message in flight, when announced.
    """

    framing_mode: str  # "LENGTH_PREFIXED", "DELIMITED" or "UNFRAMED"
    partial_buffer_hash: str | None
    last_byte_epoch: float
    expected_size: int | None


@dataclass(frozen=True)
class FramingPolicy:
    """The seed's ``incomplete_message_timeout`` (s) and the time of the evaluation."""

    incomplete_timeout_sec: float
    current_epoch: float


@dataclass(frozen=True)
class FramingManifest:
    """The guard's answer: a verdict, a human directive, and a digest that pins both."""

    verdict: FramingVerdict
    directive: str
    manifest_digest: str


class StreamFramingGuard:
    """Seed 000's decision boundary as four gates (see the module docstring)."""

    @staticmethod
    def _hash(data: str) -> str:
        return hashlib.sha256(data.encode("utf-8")).hexdigest()

    @classmethod
    def evaluate_stream(cls, state: StreamState, policy: FramingPolicy) -> FramingManifest:
        """Run the gates in order; the first that applies decides."""
        # Gate 1: Unframed stream rejection
        if state.framing_mode == "UNFRAMED":
            return FramingManifest(
                verdict=FramingVerdict.DISCARD_AND_RESET,
                directive="HALT: Unframed stream cannot be parsed reliably. Implement framing.",
                manifest_digest=cls._hash("UNFRAMED"),
            )

        # Gate 2: No partial buffer. Truthiness on purpose (seed): "" means no buffer too.
        if not state.partial_buffer_hash:
            return FramingManifest(
                verdict=FramingVerdict.MESSAGE_COMPLETE,
                directive="PROCEED: No partial buffer. Stream is at a clean message boundary.",
                manifest_digest=cls._hash("CLEAN"),
            )

        # Gate 3: Timeout check. Strictly greater: a buffer exactly at the timeout is not stale.
        age = policy.current_epoch - state.last_byte_epoch
        if age > policy.incomplete_timeout_sec:
            return FramingManifest(
                verdict=FramingVerdict.STALE_PARTIAL_BUFFER,
                directive=(
                    f"HALT: Partial buffer is {age:.1f}s old, exceeding "
                    f"{policy.incomplete_timeout_sec}s timeout. Discard."
                ),
                manifest_digest=cls._hash(f"STALE:{age:.1f}"),
            )

        # Gate 4: In progress. Truthiness on purpose (seed): an expected size of 0 is "UNKNOWN".
        digest = cls._hash(
            json.dumps(
                {
                    "buffer": state.partial_buffer_hash,
                    "age": f"{age:.1f}",
                    "expected": str(state.expected_size) if state.expected_size else "UNKNOWN",
                },
                sort_keys=True,
            )
        )
        return FramingManifest(
            verdict=FramingVerdict.MESSAGE_IN_PROGRESS,
            directive="WAIT: Partial message in progress. Await remaining bytes.",
            manifest_digest=digest,
        )
