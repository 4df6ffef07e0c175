"""A correct consumer that reconnects, for the broken consumers whose bug is in how they put
the result together across attempts.

It reads each connection through the reference framing codec (``framed.py``) and the reference
payload layer (``payload.py``), and reconnects up to ``{max_reconnects}`` times when a connection
breaks before the payload's end. What a reconnect gets is ``{producer_mode}``:

- ``restart``: the stream again from its start, so the result is the last attempt's messages:
  the payload layer starts over and the messages handed on so far are dropped (``restart``);
- ``continue`` (SSE): the stream resumed after the last event id dispatched (``Last-Event-ID``),
  so the payload layer goes on and every message of the new attempt is added.

Each bug module subclasses ``Reconnecting`` and overrides one hook; everything else is right.
"""

from __future__ import annotations

from reference_impl.events import Message
from reference_impl.report import Accepted, ConsumerReport
from tests.broken.contract import ALL_PAYLOADS, Tally, Target, connect
from tests.broken.framed import FramedReader, broken_frame
from tests.broken.payload import PayloadLayer

FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")
PAYLOADS = ALL_PAYLOADS
#: besides the timeouts and the safe-boundary policy (``catalogue.HONOURED``)
HONOURS = ("max_reconnects", "request")


class Reconnecting:
    """``consume()`` the target's stream; the hooks say how each attempt joins the result."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.continuing = target.producer_mode == "continue"
        self.last_end = ""  # how the last attempt ended (``FramedReader.end``)

    # -- the hooks (each bug overrides one) -----------------------------------------------
    def restart(self, tally: Tally) -> None:
        """A restarted stream's result stands alone: drop what the abandoned attempt handed on."""
        tally.accepted.clear()

    def replayed(self, message: Message, index: int, attempt: int) -> bool:
        """Whether message ``index`` (0-based) of attempt ``attempt`` was handed on already (the
        payload sees it, the result does not get it again): none was, since the producer
        resumed right after the cursor, or restarted and the result started over."""
        return False

    def attempt_done(self, tally: Tally, handed: list[Accepted], attempt: int) -> None:
        """An attempt ended having handed on ``handed``: nothing more to do."""

    # -- the loop -----------------------------------------------------------------------------
    def consume(self) -> ConsumerReport:
        tally, payload, last_id = Tally(), PayloadLayer(self.target), ""
        for attempt in range(self.target.max_reconnects + 1):
            if attempt and not self.continuing:
                payload = PayloadLayer(self.target)
                self.restart(tally)
            with connect(self.target) as sock:
                reader = FramedReader(sock, self.target, tally, last_id if self.continuing else "")
                handed: list[Accepted] = []
                for index, message in enumerate(reader.messages()):
                    if not payload.feed(message.data, message.kind):
                        return payload.conclude(tally, "error", payload.error)
                    if self.replayed(message, index, attempt):
                        continue
                    tally.accept(message.data)
                    handed.append(tally.accepted[-1])
                    last_id = message.id or last_id
            self.attempt_done(tally, handed, attempt)
            self.last_end = reader.end
            if broken_frame(reader.error):
                return payload.conclude(tally, "error", reader.error, reader.partial)
            ended = (reader.end, reader.error, reader.stream_end, reader.in_message)
            if attempt == self.target.max_reconnects or payload.finished(*ended):
                break
            verdict = "DISCARD_AND_RESET" if reader.in_message else "MESSAGE_COMPLETE"
            tally.close(reader.end, verdict, reader.error.code.value if reader.error else None)
        return payload.conclude(
            tally,
            reader.end,
            reader.error,
            reader.partial,
            reader.stream_end,
            reader.in_message,
        )


if __name__ == "__main__":  # the correct consumer itself (the bug modules' baseline)
    from tests.broken.contract import emit

    emit(Reconnecting(Target.from_env()).consume())
