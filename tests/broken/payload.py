"""The reference payload layer, used unchanged by broken consumers whose bug sits below it.

A consumer with a framing bug (it fuses, splits or truncates messages) still needs a verdict for
what it received: the envelope verifier, the token tracker and the seed guards decide it here,
exactly as in the reference consumer. So whatever goes wrong in such a consumer's report goes
wrong because of its framing bug, not because of a second, accidental one.
"""

from __future__ import annotations

import hashlib
import math

from reference_impl.errors import CodecError
from reference_impl.events import Message, StreamEnd
from reference_impl.framing_guard import FramingPolicy, StreamFramingGuard, StreamState
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.session import FRAMING_MODES
from reference_impl.payload.registry import payload
from reference_impl.payload.sides import Ending, PayloadSide
from reference_impl.report import ConsumerReport, Recorded
from tests.broken.contract import Tally, Target


def make_side(target: Target) -> PayloadSide:
    """The reference payload's own check (the registry's), for the target's payload."""
    config = ConsumerConfig(
        target.framing,
        target.payload,
        target.profile,
        accept_partial_at_safe_boundary=target.accept_partial_at_safe_boundary,
    )
    return payload(target.payload).side(config)


class PayloadLayer:
    """Feed it whole messages; ask it once, at the end, for the report."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._side = make_side(target)
        self.error: CodecError | None = None

    def feed(self, data: bytes, kind: str = "") -> bool:
        """Hand one message on; False once the payload refused one (the stream is then dead)."""
        if self.error is not None:
            return False
        try:
            self._side.feed(Message(data, kind))
        except CodecError as err:
            self.error = err
            return False
        return True

    def finished(
        self, end: str, error: CodecError | None, stream_end: StreamEnd | None, in_message: bool
    ) -> bool:
        """Did the stream reach its end as far as the payload can tell (a reconnect would not
        help)? A refusal is a verdict too."""
        if self.error is not None:
            return True
        return bool(self._side.finished(Ending(end, error, b"", stream_end, in_message)))

    def conclude(
        self,
        tally: Tally,
        end: str,
        error: CodecError | None,
        partial: bytes = b"",
        stream_end: StreamEnd | None = None,
        in_message: bool | None = None,
    ) -> ConsumerReport:
        """Close the last connection in ``tally`` and make the report.

        ``partial`` is what the consumer *believes* is left of a message in flight (a consumer
        that never notices a cut passes ``b""`` and gets a clean framing verdict);
        ``in_message`` defaults to whether there is any.
        """
        in_message = bool(partial) if in_message is None else in_message
        if self.error is not None:
            end, error = "error", self.error
        state = StreamState(
            FRAMING_MODES[self.target.framing],
            hashlib.sha256(partial).hexdigest() if in_message else None,
            0.0,
            None,
        )
        # A connection that ended can never deliver the rest of its partial message.
        policy = FramingPolicy(self.target.incomplete_message_timeout_s, math.inf)
        manifest = StreamFramingGuard.evaluate_stream(state, policy)
        ending = Ending(end, error, partial, stream_end, in_message)
        conclusion = self._side.conclude(ending, manifest)
        tally.close(end, manifest.verdict.name, error.code.value if error else None)
        return tally.report(
            conclusion.verdict,
            conclusion.complete,
            conclusion.error_code,
            detail=error.detail if error else "",
            recorded=Recorded(
                incomplete_message_timeout=self.target.incomplete_message_timeout_s,
                stream_completion_signal_receipt=conclusion.completion_receipt,
                expected_stream_length_hint=conclusion.length_hint,
                stream_recovery_predicate=conclusion.recovery_predicate,
            ),
        )
