"""``inject_event``: send an event of the stream's own API in the middle of it (an
``overloaded_error`` after partial text, a ``response.failed`` inside tool-call arguments, a
``ping`` anywhere), framed as the link frames its messages."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar, Literal

from harness.errors import FieldError, PositionError
from harness.faults.config import BaseFault
from harness.faults.drop_frame import Frame
from harness.faults.effects import Effect
from harness.faults.items import Heartbeat, Item
from harness.faults.position import Position
from harness.faults.stage import LinkShape, Locator, PositionedStage, Stage, StageContext
from reference_impl.events import Message
from reference_impl.payload.catalogue import events_of, injected_event

EventName = Literal["error", "ping", "response.failed", "response.incomplete"]
#: the framings whose messages this fault can write (a gRPC message rides in HTTP/2 DATA
#: frames whose stream and flow-control state only the connection knows)
FRAMINGS = ("sse", "ndjson", "length-prefixed", "websocket")


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectEvent(BaseFault):
    """Write one event of the link's token profile right before frame ``before_frame``, as a
    service does that fails, or keeps the connection alive, after it answered 200: the
    producer's frames are all delivered, in order, around it. On the Responses API the event
    carries the ``sequence_number`` due there (frame N carries N - 1), so a consumer sees the
    event itself, not a gap.

    - ``event``: from the profile's catalogue: ``error`` (anthropic: ``overloaded_error``;
      openai-responses; openai: the in-band error chunk), ``ping`` (anthropic),
      ``response.failed`` and ``response.incomplete`` (openai-responses).
    - ``before_frame``: the frame it goes before, 1-based (the first delta, a frame after
      partial text, one inside a tool call's arguments).
    """

    kind: ClassVar[str] = "inject_event"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.ADDITION})
    event: EventName
    before_frame: Frame

    def check_placement(self, locator: Locator) -> None:
        """The link must frame tokens of a profile that has this event. (Only a locator that
        knows its link can say; the stage checks again on the live stream.)"""
        try:
            locator.offset(Position(frame=self.before_frame))
        except PositionError as err:
            raise PositionError(err.message, path=("before_frame",)) from None
        shape = getattr(getattr(locator, "traits", None), "shape", None)
        if isinstance(shape, LinkShape) and (problem := event_problem(self.event, shape)):
            raise FieldError(problem, path=("event",))

    def stage(self, ctx: StageContext) -> Stage:
        return InjectEventStage(self, ctx)


def event_problem(event: str, shape: LinkShape) -> str | None:
    """Why ``event`` cannot be injected on a link of ``shape``, or None."""
    if shape.framing not in FRAMINGS:
        return f"needs framing {', '.join(FRAMINGS)} (this link is {shape.framing})"
    if shape.profile is None:
        return "needs payload tokens: the event belongs to a token profile"
    if event not in events_of(shape.profile):
        known = ", ".join(events_of(shape.profile)) or "none"
        return f"profile {shape.profile} has no event {event!r} (it has: {known})"
    return None


class InjectEventStage(PositionedStage):
    def __init__(self, fault: InjectEvent, ctx: StageContext) -> None:
        super().__init__(Position(frame=fault.before_frame), ctx)
        self.fault = fault

    def fire(self, offset: int, now: float) -> list[Item]:
        fault, shape = self.fault, self.ctx.shape
        if problem := event_problem(fault.event, shape):
            self.ctx.recorder.fault("unreached", None, f"{fault.kind}: {problem}", now)
            return []
        assert shape.profile is not None and shape.framing is not None
        message = injected_event(shape.profile, fault.event, fault.before_frame - 1)
        data = framed(shape, message)
        detail = f"{fault.event} before frame {fault.before_frame} ({len(data)} bytes)"
        self.ctx.recorder.fault(fault.kind, offset, detail, now)
        # Not a Chunk: the bytes are not the producer's and have no offset in its stream.
        return [Heartbeat(data, "inserted")]


def framed(shape: LinkShape, message: Message) -> bytes:
    """``message`` as the link's framing writes one message from the producer."""
    data = message.data
    if shape.framing == "ndjson":
        return data + b"\n"
    if shape.framing == "length-prefixed":
        return struct.pack(">I", len(data)) + data
    if shape.framing == "websocket":
        return websocket_frame(data, text=shape.ws_text)
    event = (b"event: " + message.kind.encode() + b"\n" if message.kind else b"") + b"data: "
    body = event + data + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(body), body) if shape.sse_chunked else body


def websocket_frame(payload: bytes, *, text: bool) -> bytes:
    """One final, unmasked (server) frame, RFC 6455 5.2."""
    head = bytes([0x81 if text else 0x82])
    size = len(payload)
    if size < 126:
        return head + bytes([size]) + payload
    if size < 1 << 16:
        return head + bytes([126]) + struct.pack(">H", size) + payload
    return head + bytes([127]) + struct.pack(">Q", size) + payload
