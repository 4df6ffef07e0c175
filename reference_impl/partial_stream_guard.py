"""Seed 002's partial-stream guard: was a stream that ended actually complete?

Termination (the connection closed) is not completion (the producer finished on purpose). The
gates run in the seed's order and the first that applies decides:

1. the producer's completion signal arrived -> ``COMPLETE_EXPLICIT``.
2. an advertised length was given and the received length equals it -> ``COMPLETE_BY_LENGTH``
   (design decision 3: a length the producer advertised, never a model's own token-limit stop).
3. the stream stopped on a safe boundary and the policy accepts partial results there ->
   ``PARTIAL_SAFE_BOUNDARY``.
4. otherwise -> ``PARTIAL_MID_TOKEN``.

This is the seed's code with types added. Gate order, directive strings and manifest digest
formulas are kept byte for byte: the digests are a public contract. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import Enum, auto


class PartialStreamVerdict(Enum):
    """How complete the received stream is."""

    COMPLETE_EXPLICIT = auto()
    COMPLETE_BY_LENGTH = auto()
    PARTIAL_MID_TOKEN = auto()
    PARTIAL_SAFE_BOUNDARY = auto()


@dataclass(frozen=True)
class StreamState:
    """What the consumer knows when the stream ended.

    ``completion_signal_present`` is the seed's ``stream_completion_signal_receipt``;
    ``expected_length`` its ``expected_stream_length_hint`` (None when nothing was advertised);
    ``received_length`` is counted in the same unit as the hint (bytes, tokens or records).
    """

    completion_signal_present: bool
    expected_length: int | None
    received_length: int
    terminal_byte_is_safe_boundary: bool


@dataclass(frozen=True)
class StreamPolicy:
    """Whether this consumer explicitly tolerates partial results cut at a safe boundary."""

    accept_partial_at_safe_boundary: bool


@dataclass(frozen=True)
class StreamManifest:
    """The guard's answer: a verdict, a human directive, and a digest that pins both."""

    verdict: PartialStreamVerdict
    directive: str
    manifest_digest: str


class PartialStreamGuard:
    """Seed 002's decision boundary as four gates (see the module docstring)."""

    @staticmethod
    def _hash(data: str) -> str:
        return hashlib.sha256(data.encode("utf-8")).hexdigest()

    @classmethod
    def evaluate_stream(cls, state: StreamState, policy: StreamPolicy) -> StreamManifest:
        """Run the gates in order; the first that applies decides."""
        # Gate 1: Explicit completion wins over everything, length included.
        if state.completion_signal_present:
            digest = cls._hash(
                json.dumps(
                    {"received": str(state.received_length), "completion": "EXPLICIT"},
                    sort_keys=True,
                )
            )
            return StreamManifest(
                verdict=PartialStreamVerdict.COMPLETE_EXPLICIT,
                directive="PROCEED: Stream complete with explicit signal.",
                manifest_digest=digest,
            )

        # Gate 2: Length match (an advertised 0 with nothing received matches too).
        if state.expected_length is not None and state.received_length == state.expected_length:
            digest = cls._hash(
                json.dumps(
                    {
                        "received": str(state.received_length),
                        "expected": str(state.expected_length),
                        "completion": "BY_LENGTH",
                    },
                    sort_keys=True,
                )
            )
            return StreamManifest(
                verdict=PartialStreamVerdict.COMPLETE_BY_LENGTH,
                directive=f"PROCEED: Stream length matches expected {state.expected_length}.",
                manifest_digest=digest,
            )

        # Gate 3: Safe boundary, only if the consumer opted in.
        if state.terminal_byte_is_safe_boundary and policy.accept_partial_at_safe_boundary:
            digest = cls._hash(
                json.dumps(
                    {"received": str(state.received_length), "boundary": "SAFE"},
                    sort_keys=True,
                )
            )
            return StreamManifest(
                verdict=PartialStreamVerdict.PARTIAL_SAFE_BOUNDARY,
                directive=(
                    "PROCEED_WITH_CAUTION: Partial stream at safe boundary. Verify downstream."
                ),
                manifest_digest=digest,
            )

        # Gate 4: Mid-token partial
        return StreamManifest(
            verdict=PartialStreamVerdict.PARTIAL_MID_TOKEN,
            directive="HALT: Stream truncated mid-token. Re-fetch or repair.",
            manifest_digest=cls._hash(f"MID_TOKEN:{state.received_length}"),
        )
