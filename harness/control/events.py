"""Per-connection timelines of a long-running proxy, kept for a window of recent connections.

A case's proxy keeps one timeline of everything (the judge and the reports read it). A proxy
that runs for days cannot: ``ConnectionLog`` (the ``ConnectionStore`` of
``harness/proxy/server.py``) gives each connection a small timeline of its own, which keeps no
bytes, no write segments and at most ``MAX_FAULTS_KEPT`` fault records, and drops the oldest
closed connection once more than ``window`` have closed. What the events endpoint lists, and
what the metrics add up, comes from here; totals survive the window.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from harness.evidence.timeline import Timeline

#: closed connections kept per proxy, by default
DEFAULT_WINDOW = 100
#: fault records kept per connection (a latency toxic records every read it delays)
MAX_FAULTS_KEPT = 100


@dataclass(slots=True)
class ConnectionTimeline(Timeline):
    """A timeline of one connection: no bytes, no segments, a bounded list of faults, and a
    count of every fault fired by kind. Its fault records are taken under a lock: the two
    legs of a connection may each run their faults in a worker thread
    (``harness/proxy/threadchain.py``), and a count or the bound must not lose a record."""

    by_kind: Counter[str] = field(default_factory=Counter)
    faults_dropped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def thread_safe(self) -> bool:
        return self.keeps_nothing()

    def fault(
        self,
        now: float,
        connection: int,
        direction: str,
        name: str,
        offset: int | None,
        detail: str,
        source: str = "",
    ) -> None:
        with self.lock:
            self.by_kind[name] += 1
            if len(self.faults) >= MAX_FAULTS_KEPT:
                self.faults_dropped += 1
                return
            Timeline.fault(self, now, connection, direction, name, offset, detail, source)


def connection_timeline(now: float) -> ConnectionTimeline:
    return ConnectionTimeline(started=now, max_segments=0, max_bytes_per_leg=0)


@dataclass(slots=True)
class ConnectionRecord:
    """One connection of one proxy: its numbers, its client and its timeline."""

    id: int
    number: int
    client: tuple[str, int]
    opened_at: float  # wall clock, seconds since the epoch
    timeline: ConnectionTimeline
    closed_at: float | None = None
    #: bytes written per direction, kept when the connection closes (its legs are dropped)
    sent: dict[str, int] | None = None

    def written(self, direction: str) -> int:
        if self.sent is not None:
            return self.sent.get(direction, 0)
        return sum(leg.written for leg in self.timeline.legs.values() if leg.direction == direction)

    def read(self, direction: str) -> int:
        return sum(end.read for end in self.timeline.ends if end.direction == direction)

    def as_json(self) -> dict[str, Any]:
        tl = self.timeline
        return {
            "id": self.id,
            "connection": self.number,
            "client": f"{self.client[0]}:{self.client[1]}",
            "opened": round(self.opened_at, 6),
            "closed": None if self.closed_at is None else round(self.closed_at, 6),
            "bytes": {d: self.written(d) for d in ("upstream", "downstream")},
            "faults": [
                {
                    "t": round(f.t, 6),
                    "direction": f.direction,
                    "toxic": f.source,
                    "kind": f.name,
                    "offset": f.offset,
                    "detail": f.detail,
                }
                for f in tl.faults
            ],
            "faults_dropped": tl.faults_dropped,
            "ends": [
                {
                    "t": round(e.t, 6),
                    "direction": e.direction,
                    "how": str(e.how),
                    "written": e.written,
                    "read": e.read,
                }
                for e in tl.ends
            ],
        }


@dataclass
class Totals:
    """What closed connections add up to (the metrics), whatever the window dropped."""

    connections: int = 0
    written: Counter[str] = field(default_factory=Counter)
    read: Counter[str] = field(default_factory=Counter)
    fired: Counter[str] = field(default_factory=Counter)


class ConnectionLog:
    """The connections of one proxy: those open, and the last ``window`` closed."""

    def __init__(self, window: int = DEFAULT_WINDOW, *, first_id: int = 1) -> None:
        self.window = window
        self.open: dict[int, ConnectionRecord] = {}
        self.recent: deque[ConnectionRecord] = deque(maxlen=max(window, 0))
        self.totals = Totals()
        self._next_id = first_id

    # -- ConnectionStore --------------------------------------------------------------------
    def opened(self, number: int, now: float, client: tuple[str, int]) -> Timeline:
        record = ConnectionRecord(
            self._next_id, number, client, time.time(), connection_timeline(now)
        )
        self._next_id += 1
        self.open[number] = record
        self.totals.connections += 1
        return record.timeline

    def closed(self, number: int, now: float) -> None:
        record = self.open.pop(number, None)
        if record is None:
            return
        record.closed_at = time.time()
        totals = self.totals
        record.sent = {d: record.written(d) for d in ("upstream", "downstream")}
        totals.written.update(record.sent)
        for direction in ("upstream", "downstream"):
            totals.read[direction] += record.read(direction)
        totals.fired.update(record.timeline.by_kind)
        record.timeline.legs.clear()  # nothing more is written: keep the ends only
        self.recent.append(record)

    # -- reading ----------------------------------------------------------------------------
    def records(self) -> list[ConnectionRecord]:
        """Closed ones (oldest first) then open ones, as the events endpoint lists them."""
        return [*self.recent, *sorted(self.open.values(), key=lambda r: r.id)]

    def written(self, direction: str) -> int:
        """Bytes written in ``direction`` so far, open connections included."""
        live = sum(r.written(direction) for r in self.open.values())
        return self.totals.written[direction] + live

    def fired(self) -> Counter[str]:
        counts = Counter(self.totals.fired)
        for record in self.open.values():
            counts.update(record.timeline.by_kind)
        return counts

    def close_all(self, now: float) -> None:
        """The proxy stopped: every connection it had is over."""
        for number in list(self.open):
            self.closed(number, now)
