"""When a replay writes what: a recording's producer side as a schedule (pure).

The producer answered a request, so the replay waits for one: ``request_bytes`` is what the
consumer had sent before the producer's first byte was read (0 when the producer spoke
first). The replay's clock starts when that request is in; each recorded read of the producer
becomes one write at its recorded time after the request's last read, divided by the speed
(2 plays twice as fast, 0.5 at half speed, 0 as fast as possible: every delay is 0). The end
(FIN or RST) keeps its time the same way; a side that had not ended when the recording
stopped stays open until the consumer closes.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.record.format import Ending, Read, Recording


@dataclass(frozen=True, slots=True)
class Write:
    #: seconds after the request is in
    at_s: float
    data: bytes


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    #: consumer bytes to wait for before the first write
    request_bytes: int
    writes: tuple[Write, ...]
    #: how the producer's side ends (None: left open until the consumer closes)
    end: Ending | None
    #: seconds after the request is in
    end_at_s: float


def _scaled(t_ms: float, origin_ms: float, speed: float) -> float:
    if speed == 0:
        return 0.0
    return max(0.0, t_ms - origin_ms) / 1000 / speed


def replay_plan(recording: Recording, speed: float = 1.0) -> ReplayPlan:
    """The schedule of ``recording``'s producer side at ``speed`` (>= 0)."""
    if speed < 0:
        raise ValueError(f"speed must be >= 0 (got {speed})")
    produced = recording.reads("producer")
    before = _request(recording)
    origin = before[-1].t_ms if before else 0.0
    writes = tuple(Write(_scaled(r.t_ms, origin, speed), r.data) for r in produced)
    end = recording.end_of("producer")
    last = writes[-1].at_s if writes else 0.0
    end_at = last if end is None else max(last, _scaled(end.t_ms, origin, speed))
    return ReplayPlan(
        request_bytes=sum(len(r.data) for r in before),
        writes=writes,
        end=None if end is None else end.how,
        end_at_s=end_at,
    )


def _request(recording: Recording) -> list[Read]:
    """The consumer's reads before the producer's first byte or its end (in file order)."""
    before: list[Read] = []
    for event in recording.events:
        if event.side == "producer":
            break
        if isinstance(event, Read):
            before.append(event)
    return before
