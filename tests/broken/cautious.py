"""A correct consumer, more cautious than the reference: it refuses a result the payload proved
when the framing's own end then does not come.

A token stream's ``[DONE]`` or an envelope's verified trailer proves the result; the reference
consumer takes it, whatever happens to the HTTP body, the WebSocket close or the gRPC trailers
after it. This consumer does what the OpenAI SDK does on an incomplete chunked read: on a framing
with an end of its own (a chunked SSE body, WebSocket, gRPC) it fails the stream when that end
never came, the proof notwithstanding. That is caution, not a defect: the library must grade it
``non-strict`` there, never ``failed`` (``docs/grades.md``). Everything else is
``reconnecting.py``'s.

Speaks: every framing; every payload.
"""

from __future__ import annotations

from dataclasses import replace

from reference_impl.report import ConsumerReport
from tests.broken.contract import Target, emit
from tests.broken.reconnecting import FRAMINGS, HONOURS, PAYLOADS, Reconnecting

__all__ = ["FRAMINGS", "HONOURS", "PAYLOADS"]


class Cautious(Reconnecting):
    def consume(self) -> ConsumerReport:
        report = super().consume()
        has_end = self.target.framing in ("websocket", "grpc") or (
            self.target.framing == "sse" and self.target.sse_body == "chunked"
        )
        if report.complete and has_end and self.last_end != "stream-end":
            refused = "STREAM_END_MISSING"
            return replace(report, verdict=refused, complete=False, error_code=refused, accepted=())
        return report


if __name__ == "__main__":
    emit(Cautious(Target.from_env()).consume())
