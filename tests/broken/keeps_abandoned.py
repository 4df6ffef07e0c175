"""Broken consumer: keeps the abandoned attempt's messages after a restart.

The bug: when the link breaks and the consumer reconnects to a producer that restarts the
stream, it goes on appending to the result it had: the messages the abandoned attempt handed on
stay, and the replay is appended after them (an envelope's header and chunk 1 of connection 1,
then all five frames of connection 2: seven frames for a five-frame result). Every message is
real (it was sent, on its connection) and the restarted stream is verified whole, so neither
I1 nor I2 sees anything; only the result across attempts (I3) does. Everything else is right
(``reconnecting.py``).

Speaks: every framing (``restart``; SSE also ``continue``, where there is nothing to drop); every
payload.
"""

from __future__ import annotations

from tests.broken.contract import Tally, Target, emit
from tests.broken.reconnecting import FRAMINGS, HONOURS, PAYLOADS, Reconnecting

__all__ = ["FRAMINGS", "HONOURS", "PAYLOADS"]


class KeepsAbandoned(Reconnecting):
    def restart(self, tally: Tally) -> None:
        """BUG: the result of the abandoned attempt should be dropped here."""


if __name__ == "__main__":
    emit(KeepsAbandoned(Target.from_env()).consume())
