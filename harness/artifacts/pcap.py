"""pcap files of a case's conversations, synthesized from the proxy's timeline (scapy, lazily).

Each leg (one connection, one direction) is written on one socket, and the conversation on that
socket is one TCP stream in the file: the proxy's side is what it wrote on the leg, the peer's
side what the proxy read from that peer (the other leg's source, before any fault), so
``tshark -z follow,tcp,raw,N`` gives back both, byte for byte:

- downstream leg of connection n: proxy ``127.0.0.1:8080`` with consumer ``127.0.0.1:40000+n``
  (the consumer opened it: its SYN comes first); the consumer's side is its request;
- upstream leg of connection n: proxy ``127.0.0.1:50000+n`` with producer ``127.0.0.1:8081``;
  the producer's side is its stream as the proxy read it.

Packets: the three-way handshake, one packet per recorded write or read (split at MSS), each
acknowledging what the other side had sent by then, then FIN (with its ACK) or RST as each side
ended; a leg left without an end of its own gets the FIN the proxy sent when another leg tore
the connection down (unless the peer had reset that socket). Sequence numbers count every byte,
so a side whose kept bytes were capped (``Leg.capped``) shows a gap before its end ("previous
segment not captured") rather than a shorter, seemingly complete stream.

scapy computes the checksums and writes the file; the frames themselves are packed here, each
port pair's header once, with sequence numbers, flags, lengths and checksums patched in per
packet. Building a scapy packet per write costs about a millisecond (a sweep of failing cases
with thousands of writes each could not afford it) and importing scapy's layers alone costs a
tenth of a second; a test checks the frames are byte for byte what scapy's layers build.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.evidence.timeline import HowEnded, Leg, LegEnd, Timeline

PROXY_PORT = 8080
PRODUCER_PORT = 8081
CONSUMER_PORT_BASE = 40000
PROXY_OUT_PORT_BASE = 50000
LOCALHOST = "127.0.0.1"
MSS = 65_000  # loopback carries ~64 KiB segments; an Ethernet frame must stay under 65,535
WRITER_ISN = 1_000_000
READER_ISN = 5_000_000
TEARDOWN = frozenset(
    {HowEnded.RST, HowEnded.FIN, HowEnded.ERROR, HowEnded.PEER_RST}
)  # ends that close the connection

_ETH = 14
_IP = _ETH
_TCP = _ETH + 20
_TCP_HEADER_WORDS = 5  # 20 bytes, no options


@dataclass(frozen=True, slots=True)
class Packet:
    t: float
    frame: bytes


def endpoints(connection: int, direction: str) -> tuple[int, int, bool]:
    """(writer port, reader port, whether the writer opened the connection) of a leg."""
    if direction == "downstream":
        return PROXY_PORT, CONSUMER_PORT_BASE + connection, False
    return PROXY_OUT_PORT_BASE + connection, PRODUCER_PORT, True


def _header(src: int, dst: int) -> bytes:
    """Ethernet + IPv4 + TCP headers from port ``src`` to ``dst`` on loopback, the fields
    ``frame`` patches left zero. Byte for byte what scapy builds for
    ``Ether(src=MAC0, dst=MAC0) / IP(src=LOCALHOST, dst=LOCALHOST, flags="DF", ttl=64, id=0) /
    TCP(sport=src, dport=dst, window=65535)`` (a test holds it to that); packed here because
    importing scapy's layers costs more than writing a run's captures."""
    ethernet = bytes(12) + struct.pack("!H", 0x0800)
    local = bytes([127, 0, 0, 1])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 0, 0, 0x4000, 64, 6, 0, local, local)
    tcp = struct.pack("!HHIIBBHHH", src, dst, 0, 0, _TCP_HEADER_WORDS << 4, 0, 65535, 0, 0)
    return ethernet + ip + tcp


class Frames:
    """Raw Ethernet/IPv4/TCP frames between two loopback ports: the pair's header with the
    per-packet fields and checksums (scapy's) patched in."""

    def __init__(self, src: int, dst: int) -> None:
        from scapy.utils import checksum  # noqa: PLC0415 - scapy is slow to import

        self._header = _header(src, dst)
        self._checksum: Callable[[bytes], int] = checksum

    def frame(self, seq: int, ack: int, flags: int, payload: bytes = b"") -> bytes:
        checksum = self._checksum
        frame = bytearray(self._header + payload)
        struct.pack_into("!H", frame, _IP + 2, len(frame) - _ETH)  # IP total length
        struct.pack_into("!H", frame, _IP + 10, 0)
        struct.pack_into("!H", frame, _IP + 10, checksum(bytes(frame[_IP:_TCP])))
        words = (seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, _TCP_HEADER_WORDS << 4, flags)
        struct.pack_into("!IIBB", frame, _TCP + 4, *words)
        struct.pack_into("!H", frame, _TCP + 16, 0)
        tcp = bytes(frame[_TCP:])
        pseudo = bytes(frame[_IP + 12 : _IP + 20]) + struct.pack("!BBH", 0, 6, len(tcp))
        struct.pack_into("!H", frame, _TCP + 16, checksum(pseudo + tcp))
        return bytes(frame)


FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def _teardown(timeline: Timeline, connection: int) -> LegEnd | None:
    """The end that tore the whole connection down (the proxy then closed both sockets)."""
    for end in timeline.ends:
        if end.connection == connection and end.how in TEARDOWN:
            return end
    return None


@dataclass(frozen=True, slots=True)
class _Event:
    """One thing a side of a conversation did: sent ``data`` at ``offset`` of its stream, or
    ended it (``how``: ``fin``, ``rst``)."""

    t: float
    writer: bool  # the proxy's side of the conversation (the leg's writer)
    offset: int = 0
    data: bytes = b""
    how: str = ""


OTHER_DIRECTION = {"downstream": "upstream", "upstream": "downstream"}
#: how a leg ended -> what its source (the peer the proxy read from) did to end it
SOURCE_ENDS = {HowEnded.EOF: "fin", HowEnded.PEER_RST: "rst"}


def leg_packets(timeline: Timeline, connection: int, direction: str) -> Iterator[Packet]:
    """The packets of the conversation a leg is written on, in order: the proxy's writes on
    it, and what the proxy read from the same peer (the other leg's source, before any
    fault): the consumer's request on the downstream leg's conversation, the producer's
    stream on the upstream leg's."""
    leg = timeline.legs.get((connection, direction)) or Leg(connection, direction)
    writer_port, reader_port, writer_opens = endpoints(connection, direction)
    out, back = Frames(writer_port, reader_port), Frames(reader_port, writer_port)
    events = _writes(timeline, connection, direction) + _reads(timeline, connection, direction)
    events.sort(key=lambda e: e.t)  # stable: at a tie, writes before reads, as listed
    start = events[0].t if events else _start(timeline, connection, direction)
    # Three-way handshake: whoever opened the real connection sends the SYN.
    if writer_opens:
        yield Packet(start, out.frame(WRITER_ISN, 0, SYN))
        yield Packet(start, back.frame(READER_ISN, WRITER_ISN + 1, SYN | ACK))
        yield Packet(start, out.frame(WRITER_ISN + 1, READER_ISN + 1, ACK))
    else:
        yield Packet(start, back.frame(READER_ISN, 0, SYN))
        yield Packet(start, out.frame(WRITER_ISN, READER_ISN + 1, SYN | ACK))
        yield Packet(start, back.frame(READER_ISN + 1, WRITER_ISN + 1, ACK))
    # sequence space each side used so far (bytes, plus one for a FIN): the other's ack
    used = {True: 0, False: 0}
    frames = {True: out, False: back}
    isn = {True: WRITER_ISN, False: READER_ISN}
    for event in events:
        mine, theirs = event.writer, not event.writer
        ack = isn[theirs] + 1 + used[theirs]
        if event.how:
            seq = isn[mine] + 1 + (leg.written if mine else _source_size(timeline, leg))
            if event.how == "rst":
                yield Packet(event.t, frames[mine].frame(seq, ack, RST | ACK))
                return
            yield Packet(event.t, frames[mine].frame(seq, ack, FIN | ACK))
            used[mine] = seq + 1 - isn[mine] - 1
            yield Packet(event.t, frames[theirs].frame(ack, seq + 1, ACK))
            continue
        for at in range(0, len(event.data), MSS):
            seq = isn[mine] + 1 + event.offset + at
            piece = event.data[at : at + MSS]
            yield Packet(event.t, frames[mine].frame(seq, ack, PSH | ACK, piece))
            used[mine] = max(used[mine], event.offset + at + len(piece))


def _start(timeline: Timeline, connection: int, direction: str) -> float:
    end = timeline.end_of(connection, direction)
    return end.t if end else 0.0


def _source_size(timeline: Timeline, leg: Leg) -> int:
    """Bytes the peer on the other side of ``leg``'s socket sent (the other leg's source)."""
    other = timeline.legs.get((leg.connection, OTHER_DIRECTION[leg.direction]))
    return 0 if other is None else other.source_read


def _writes(timeline: Timeline, connection: int, direction: str) -> list[_Event]:
    """The proxy's writes on the leg (kept bytes; those past the segment limit at the end),
    then how it ended the leg."""
    leg = timeline.legs.get((connection, direction)) or Leg(connection, direction)
    key = (connection, direction)
    segments = [s for s in timeline.segments if (s.connection, s.direction) == key]
    end = timeline.end_of(connection, direction)
    kept = bytes(leg.data)
    events, covered, last_t = [], 0, _start(timeline, connection, direction)
    for segment in segments:
        stop = segment.offset + segment.length
        covered, last_t = max(covered, stop), segment.t
        events.append(_Event(segment.t, True, segment.offset, kept[segment.offset : stop]))
    if covered < len(kept):  # writes past the timeline's segment limit: kept, but unlisted
        events.append(_Event(end.t if end else last_t, True, covered, kept[covered:]))
    how: str | None = end.how if end else None
    if end is None:  # torn down from the other leg: the proxy closed this socket too
        end = _teardown(timeline, connection)
        how = "fin" if end else None
        other = timeline.end_of(connection, OTHER_DIRECTION[direction])
        if other is not None and other.how == HowEnded.PEER_RST:
            return events  # the peer on this socket reset it: nothing more is sent on it
    if end is None or how == "cancelled":
        return events  # still open when the case ended
    events.append(_Event(end.t, True, how="rst" if how in ("rst", "peer-rst") else "fin"))
    return events


def _reads(timeline: Timeline, connection: int, direction: str) -> list[_Event]:
    """What the proxy read from the peer this leg writes to (the other leg's source), read
    by read, then how that peer ended its stream (FIN, RST), if it did."""
    other = timeline.legs.get((connection, OTHER_DIRECTION[direction]))
    if other is None:
        return []
    kept = bytes(other.source)
    # the last read listed carries what came after the list's limit too
    stops = [offset for _, offset in other.source_reads[1:]] + [other.source_read]
    events = (
        []
        if not other.source_reads
        else [
            _Event(t, False, offset, kept[offset:stop])
            for (t, offset), stop in zip(other.source_reads, stops, strict=True)
            if offset < len(kept)
        ]
    )
    end = timeline.end_of(connection, other.direction)
    if end is not None and (how := SOURCE_ENDS.get(end.how)) is not None:
        events.append(_Event(end.t, False, how=how))
    return events


def case_packets(timeline: Timeline) -> list[Packet]:
    """Every conversation's packets, merged in time order (a conversation's own order kept on
    ties): per connection, the consumer's with the proxy and the proxy's with the producer,
    each as soon as the proxy wrote or read a byte of it."""
    keys = set(timeline.legs)
    keys |= {(n, OTHER_DIRECTION[d]) for (n, d), leg in timeline.legs.items() if leg.source_read}
    packets = [p for key in sorted(keys) for p in leg_packets(timeline, *key)]
    return sorted(packets, key=lambda p: p.t)


def write_pcap(timeline: Timeline, path: str | Path, *, base_time: float = 0.0) -> int:
    """Write the capture of ``timeline``; ``base_time`` (epoch seconds) is when it started.
    Returns the number of packets."""
    packets = case_packets(timeline)
    write_packets(packets, path, base_time=base_time)
    return len(packets)


def write_packets(packets: Sequence[Packet], path: str | Path, *, base_time: float = 0.0) -> None:
    """Write ``packets`` (times relative to ``base_time``, epoch seconds) as a pcap file."""
    from scapy.utils import RawPcapWriter  # noqa: PLC0415

    writer: Any = RawPcapWriter(str(path), linktype=1, sync=False)  # 1: Ethernet
    try:
        writer.write_header(None)
        for packet in packets:
            stamp = base_time + max(packet.t, 0.0)
            sec = int(stamp)
            writer.write_packet(packet.frame, sec=sec, usec=int((stamp - sec) * 1_000_000))
    finally:
        writer.close()
