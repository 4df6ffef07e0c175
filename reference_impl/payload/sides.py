"""How each payload turns the messages of one stream into the consumer's verdict.

A side is fed every whole message the framing delivered (``feed`` may raise ``CodecError``), then
asked once for a ``Conclusion`` given how the stream ended. The framing guard's manifest for the
last connection is passed in: the ``messages`` payload's verdict *is* that framing verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reference_impl.errors import TRUNCATION_CODES, CodecError, ErrorCode
from reference_impl.events import Message, StreamEnd
from reference_impl.framing_guard import FramingManifest, FramingVerdict
from reference_impl.partial_stream_guard import (
    PartialStreamGuard,
    PartialStreamVerdict,
    StreamPolicy,
)
from reference_impl.payload.envelope import EnvelopeVerifier
from reference_impl.payload.tokens import TokenTracker, classify_cut

RESULT_VERIFIED = "RESULT_VERIFIED"

# TRUNCATION_CODES: framing errors that mean "the end never came" for the envelope (design
# decision 2); any other framing error means a frame that does not parse, i.e. a content error.


@dataclass(frozen=True, slots=True)
class Ending:
    """How one connection ended: ``end`` kind, the error if any, the partial message bytes, and
    the framing's explicit end if one arrived. ``in_message``: a message was in flight (bytes of
    it arrived, or only its announced size: a cut right after a length prefix leaves no payload
    byte, yet it is not a boundary)."""

    end: str
    error: CodecError | None
    partial: bytes
    stream_end: StreamEnd | None
    in_message: bool = False


@dataclass(frozen=True, slots=True)
class Conclusion:
    verdict: str
    complete: bool
    error_code: str | None
    directive: str
    manifest_digest: str
    completion_receipt: str | None = None
    #: the consumer hands the stream's messages on (False: a refused result, nothing handed on)
    hands_on: bool = True
    length_hint: int | None = None
    recovery_predicate: str | None = None


class PayloadSide(Protocol):
    def feed(self, message: Message) -> None: ...

    @property
    def content(self) -> int:
        """Messages fed so far that carried content (a ping or a keep-alive event does not)."""
        ...

    def conclude(self, ending: Ending, framing: FramingManifest) -> Conclusion: ...

    def finished(self, ending: Ending) -> bool:
        """Did the stream reach its end as far as this payload can tell (no side effects)?"""
        ...


def _code(ending: Ending) -> str | None:
    return ending.error.code.value if ending.error else None


class MessagesSide:
    """Opaque messages: accept each as it comes; the verdict is seed 000's framing verdict."""

    def __init__(self) -> None:
        self.count = 0

    def feed(self, message: Message) -> None:
        self.count += 1

    @property
    def content(self) -> int:
        return self.count

    def finished(self, ending: Ending) -> bool:
        if ending.stream_end is not None:
            return True
        return ending.end == "eof" and ending.error is None and not ending.in_message

    def conclude(self, ending: Ending, framing: FramingManifest) -> Conclusion:
        end = ending.stream_end
        verdict = framing.verdict
        if (
            ending.error is not None
            and verdict is FramingVerdict.MESSAGE_COMPLETE
            and (ending.error.code not in TRUNCATION_CODES)
        ):
            # A stream that broke its framing rules cannot be parsed reliably from here on.
            verdict = FramingVerdict.DISCARD_AND_RESET
        complete = end is not None and end.ok and verdict is FramingVerdict.MESSAGE_COMPLETE
        error = _code(ending) or (None if end is None or end.ok else ErrorCode.REMOTE_ERROR.value)
        return Conclusion(
            verdict=verdict.name,
            complete=complete,
            error_code=error,
            directive=framing.directive,
            manifest_digest=framing.manifest_digest,
            completion_receipt=end.detail if end is not None and end.ok else None,
            recovery_predicate="NONE" if complete else f"RESUME_AFTER_MESSAGE:{self.count}",
        )


class EnvelopeSide:
    """Seed 001: nothing is a result until the trailer verifies; every abnormal end is
    TRUNCATED, every content problem CHECKSUM_MISMATCH, and the first violation decides."""

    def __init__(self) -> None:
        self.verifier = EnvelopeVerifier()
        self._fed = 0

    def feed(self, message: Message) -> None:
        self.verifier.feed(message.data)
        self._fed += 1

    @property
    def content(self) -> int:
        return self._fed

    def finished(self, ending: Ending) -> bool:
        return self.verifier.trailer_seen

    def _failure(self, ending: Ending) -> CodecError | None:
        err = ending.error
        if err is not None and err.code.value.startswith("ERR_ZPARQL"):
            return err
        if err is not None and err.code not in TRUNCATION_CODES:
            return CodecError(ErrorCode.ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH, err.detail)
        if ending.stream_end is not None and not ending.stream_end.ok:
            return self.verifier.truncated(ending.stream_end.detail)
        if err is not None and not self.verifier.trailer_seen:
            return self.verifier.truncated(err.detail, at_boundary=err.at_boundary)
        try:
            self.verifier.feed_eof()
        except CodecError as eof_err:
            return eof_err
        return None

    def conclude(self, ending: Ending, framing: FramingManifest) -> Conclusion:
        failure = self._failure(ending)
        verdict = failure.code.value if failure else RESULT_VERIFIED
        receipt = None if failure else f"trailer EOS_FINALIZED {self.verifier.checksum}"
        return Conclusion(
            verdict=verdict,
            complete=failure is None,
            hands_on=failure is None,
            error_code=verdict if failure else None,
            directive="HALT: " + failure.detail if failure else "PROCEED: envelope verified.",
            manifest_digest=framing.manifest_digest,
            completion_receipt=receipt,
            length_hint=self.verifier.total_records,
            recovery_predicate=self.verifier.recovery_predicate(),
        )


class TokensSide:
    """Seed 002: completion only from the profile's signal or an advertised length."""

    def __init__(self, profile: str, accept_partial: bool) -> None:
        self.tracker = TokenTracker(profile)
        self.accept_partial = accept_partial

    def feed(self, message: Message) -> None:
        self.tracker.feed(message)

    @property
    def content(self) -> int:
        return self.tracker.content_frames

    def finished(self, ending: Ending) -> bool:
        """Gate 1, the signal; or gate 2, as many tokens as the advertised length."""
        tracker = self.tracker
        if tracker.completion_signal_present:
            return True
        return tracker.length_proves_end

    def conclude(self, ending: Ending, framing: FramingManifest) -> Conclusion:
        # The terminal byte is a safe boundary only if no frame was cut and nothing was refused.
        content_error = ending.error is not None and ending.error.code not in TRUNCATION_CODES
        safe = not ending.in_message and not content_error
        state = self.tracker.state(terminal_safe=safe)
        manifest = PartialStreamGuard.evaluate_stream(state, StreamPolicy(self.accept_partial))
        verdict = manifest.verdict
        if content_error:
            verdict = PartialStreamVerdict.PARTIAL_MID_TOKEN  # design decision 4: never repaired
        complete = (
            verdict
            in (
                PartialStreamVerdict.COMPLETE_EXPLICIT,
                PartialStreamVerdict.COMPLETE_BY_LENGTH,
            )
            and not content_error
        )
        detail = manifest.directive
        if ending.partial:
            detail += f" (cut inside: {classify_cut(ending.partial)})"
        return Conclusion(
            verdict=verdict.name,
            complete=complete,
            # a token stream is handed on whole, or as a partial the policy accepts; else not
            hands_on=complete or verdict is PartialStreamVerdict.PARTIAL_SAFE_BOUNDARY,
            error_code=_code(ending),
            directive=detail,
            manifest_digest=manifest.manifest_digest,
            completion_receipt=self.tracker.completion_receipt,
            length_hint=self.tracker.expected_length,
            recovery_predicate=self.tracker.recovery_predicate(),
        )
