"""Broken consumer: appends a reconnect's replay to the result twice.

The bug: after a reconnect the consumer hands on each message of the new attempt as it comes,
and when that attempt ends it also "makes sure the replay is in" by appending the attempt's
messages again: every message after the reconnect is in the result twice. Everything else is
right (``reconnecting.py``).

Speaks: every framing (``restart``; SSE also ``continue``); every payload.
"""

from __future__ import annotations

from reference_impl.report import Accepted
from tests.broken.contract import Tally, Target, emit
from tests.broken.reconnecting import FRAMINGS, HONOURS, PAYLOADS, Reconnecting

__all__ = ["FRAMINGS", "HONOURS", "PAYLOADS"]


class ReplayTwice(Reconnecting):
    def attempt_done(self, tally: Tally, handed: list[Accepted], attempt: int) -> None:
        if attempt:
            tally.accepted.extend(handed)  # BUG: each was handed on already, as it came


if __name__ == "__main__":
    emit(ReplayTwice(Target.from_env()).consume())
