"""Broken consumer: loses the message at the resume point.

The bug: after a reconnect the consumer takes the first message of the new attempt for a repeat
of the last one it handed on ("the server resends the event named by Last-Event-ID") and does
not hand it on. Over a continued SSE stream the producer resumes right after that id, so the
message left out is one the consumer never had: a token lost on an Anthropic resume (10 events
for 11). Over a restarted stream it keeps what it handed on and skips the replay by count, one
too many: the message after the resume point is lost. Everything else is right
(``reconnecting.py``).

Speaks: every framing (``restart``; SSE also ``continue``); every payload.
"""

from __future__ import annotations

from reference_impl.events import Message
from tests.broken.contract import Tally, Target, emit
from tests.broken.reconnecting import FRAMINGS, HONOURS, PAYLOADS, Reconnecting

__all__ = ["FRAMINGS", "HONOURS", "PAYLOADS"]


class LosesResume(Reconnecting):
    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.kept = 0  # messages handed on before the restart, skipped in the replay

    def restart(self, tally: Tally) -> None:
        self.kept = len(tally.accepted)  # the replay brings these again: skip them (right)

    def replayed(self, message: Message, index: int, attempt: int) -> bool:
        # BUG: one too many (``index < self.kept`` is right)
        return attempt > 0 and index <= self.kept


if __name__ == "__main__":
    emit(LosesResume(Target.from_env()).consume())
