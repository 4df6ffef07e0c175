"""The proxy's wire timeline: what it wrote on each leg, which faults it applied, how legs ended.

Proof for invariant I5 (the fault happened on the wire as declared) and the raw material of the
reports (timeline drawing, pcap). Memory stays bounded on long streams: at most
``max_segments`` segments are kept per timeline (later ones only update the per-leg totals), and
at most ``max_bytes`` bytes per leg are kept for pcap files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

MAX_SEGMENTS = 20_000
#: fault records kept per timeline: a latency or throttle fault records every chunk it holds,
#: so a connection that lives for days would otherwise grow without end (the first ones stay)
MAX_FAULT_RECORDS = 20_000
MAX_BYTES_PER_LEG = 4 * 1024 * 1024


class HowEnded(StrEnum):
    """How the proxy ended one leg (one direction of one connection)."""

    EOF = "eof"  # the source ended; forwarded as a FIN (half-close)
    FIN = "fin"  # a fault closed the connection gracefully
    RST = "rst"  # a fault reset the connection
    HALF = "half"  # a fault half-closed this direction
    PEER_RST = "peer-rst"  # the source reset the connection
    ERROR = "error"  # the destination was gone, or the proxy failed


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ is 3x slower, and the proxy
class Segment:  # makes one per write (a 64-byte slicer piece's write costs about as much)
    t: float  # seconds since the timeline started
    connection: int
    direction: str  # "downstream" (producer->consumer) | "upstream"
    offset: int  # offset on the written leg (after faults)
    length: int
    sha256: str  # first 16 hex digits of the segment's SHA-256; "" on a pass-through direction
    kind: str = "data"  # "data" | "heartbeat" | "inserted"


@dataclass(frozen=True, slots=True)
class FaultRecord:
    t: float
    connection: int
    direction: str
    name: str
    offset: int | None  # offset in the producer's stream where it applied
    detail: str
    #: the fault's name where it came from: ``"1"`` for a case's ``faults[1]``, a toxic's name
    #: in the control API; "" when unknown
    source: str = ""


@dataclass(frozen=True, slots=True)
class LegEnd:
    t: float
    connection: int
    direction: str
    how: HowEnded
    written: int  # bytes written on this leg
    read: int  # bytes read from the source of this leg


@dataclass(slots=True)
class Leg:
    """Bytes kept for one leg (for pcaps), bounded."""

    connection: int
    direction: str
    data: bytearray = field(default_factory=bytearray)
    written: int = 0
    capped: bool = False
    #: the bytes the proxy read from this leg's source, before any fault (bounded like
    #: ``data``), and ``(t, offset)`` of each read: the pcap's other side of the conversation
    source: bytearray = field(default_factory=bytearray)
    source_reads: list[tuple[float, int]] = field(default_factory=list)
    source_read: int = 0


@dataclass(slots=True)
class Timeline:
    started: float = 0.0
    segments: list[Segment] = field(default_factory=list)
    faults: list[FaultRecord] = field(default_factory=list)
    ends: list[LegEnd] = field(default_factory=list)
    legs: dict[tuple[int, str], Leg] = field(default_factory=dict)
    segments_dropped: int = 0
    faults_dropped: int = 0
    max_segments: int = MAX_SEGMENTS
    max_bytes_per_leg: int = MAX_BYTES_PER_LEG

    def leg(self, connection: int, direction: str) -> Leg:
        key = (connection, direction)
        if key not in self.legs:
            self.legs[key] = Leg(connection, direction)
        return self.legs[key]

    def wrote(
        self,
        now: float,
        connection: int,
        direction: str,
        data: bytes,
        kind: str = "data",
        *,
        digest: bool = True,
    ) -> None:
        """Record one write. ``digest=False`` (a direction without faults) skips the SHA-256:
        there is no fault to prove there, and hashing was a third of the relay's CPU. Called
        for every write the proxy makes (a 64-byte slicer piece too), so it is kept lean."""
        leg = self.legs.get((connection, direction)) or self.leg(connection, direction)
        size = len(data)
        if len(self.segments) < self.max_segments:
            digest_hex = hashlib.sha256(data).hexdigest()[:16] if digest else ""
            at = now - self.started
            self.segments.append(
                Segment(at, connection, direction, leg.written, size, digest_hex, kind)
            )
        else:
            self.segments_dropped += 1
        kept = leg.data
        room = self.max_bytes_per_leg - len(kept)
        if room >= size:
            kept += data
        else:
            if room > 0:
                kept += data[:room]
            leg.capped = True
        leg.written += size

    def read(self, now: float, connection: int, direction: str, data: bytes) -> None:
        """Record one read of a leg's source, before any fault (for the pcaps). Nothing on a
        timeline that keeps no byte (a long-running proxy's: its legs may run in threads)."""
        if self.max_bytes_per_leg == 0:
            return
        leg = self.legs.get((connection, direction)) or self.leg(connection, direction)
        if len(leg.source_reads) < self.max_segments:
            leg.source_reads.append((now - self.started, leg.source_read))
        room = self.max_bytes_per_leg - len(leg.source)
        leg.source += data[: max(room, 0)]
        leg.source_read += len(data)

    def keeps_nothing(self) -> bool:
        """Whether this timeline keeps no segment and no byte (only counts: a long-running
        proxy's connection)."""
        return self.max_segments == 0 and self.max_bytes_per_leg == 0

    def thread_safe(self) -> bool:
        """Whether worker threads may record into this timeline while trio does (a leg's
        chain in a thread, ``harness/proxy/threadchain.py``): only a timeline that keeps
        nothing but counts and locks its fault records (a long-running proxy's connection,
        ``harness/control/events.py``). This one does not: the judge's is trio's alone."""
        return False

    def counted(self, connection: int, direction: str, writes: int, size: int) -> None:
        """What ``wrote`` adds for ``writes`` writes of ``size`` bytes in all, on a timeline
        that keeps nothing: counts (one call for a run of a slicer's pieces; a leg copied in
        a thread counts its bytes in ``Leg.written`` as it goes and passes ``size`` 0)."""
        if writes:
            self.segments_dropped += writes
            leg = self.leg(connection, direction)
            leg.written += size
            leg.capped = True

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
        if len(self.faults) >= MAX_FAULT_RECORDS:
            self.faults_dropped += 1
            return
        self.faults.append(
            FaultRecord(now - self.started, connection, direction, name, offset, detail, source)
        )

    def ended(self, now: float, connection: int, direction: str, how: HowEnded, read: int) -> None:
        written = self.leg(connection, direction).written
        self.ends.append(LegEnd(now - self.started, connection, direction, how, written, read))

    def end_of(self, connection: int, direction: str) -> LegEnd | None:
        for end in self.ends:
            if end.connection == connection and end.direction == direction:
                return end
        return None

    def fired(self, name: str, connection: int | None = None) -> list[FaultRecord]:
        return [f for f in self.faults if f.name == name and connection in (None, f.connection)]
