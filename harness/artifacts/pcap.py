"""pcap files of a case's legs, synthesized from the proxy's timeline (scapy, imported lazily).

Each leg (one connection, one direction) is its own TCP stream in the file, with the proxy as
the writer, so ``tshark -z follow,tcp,raw,N`` gives back exactly the bytes the proxy wrote:

- downstream leg of connection n: proxy ``127.0.0.1:8080`` -> consumer ``127.0.0.1:40000+n``
  (the consumer opened it: its SYN comes first);
- upstream leg of connection n: proxy ``127.0.0.1:50000+n`` -> producer ``127.0.0.1:8081``.

Packets: the three-way handshake, one packet per recorded write (split at MSS), then FIN (with
its ACK) or RST as the leg ended; a leg left without an end of its own gets the FIN the proxy
sent when another leg tore the connection down. Sequence numbers count every byte written, so a
leg whose kept bytes were capped (``Leg.capped``) shows a gap before its end ("previous segment
not captured") rather than a shorter, seemingly complete stream.

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

from harness.evidence.timeline import HowEnded, LegEnd, Timeline

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


def leg_packets(timeline: Timeline, connection: int, direction: str) -> Iterator[Packet]:
    """The packets of one leg, in order."""
    leg = timeline.legs[(connection, direction)]
    writer_port, reader_port, writer_opens = endpoints(connection, direction)
    out, back = Frames(writer_port, reader_port), Frames(reader_port, writer_port)
    key = (connection, direction)
    segments = [s for s in timeline.segments if (s.connection, s.direction) == key]
    end = timeline.end_of(connection, direction)
    start = min([s.t for s in segments] + ([end.t] if end else []), default=0.0)
    ack = READER_ISN + 1
    # Three-way handshake: whoever opened the real connection sends the SYN.
    if writer_opens:
        yield Packet(start, out.frame(WRITER_ISN, 0, SYN))
        yield Packet(start, back.frame(READER_ISN, WRITER_ISN + 1, SYN | ACK))
        yield Packet(start, out.frame(WRITER_ISN + 1, ack, ACK))
    else:
        yield Packet(start, back.frame(READER_ISN, 0, SYN))
        yield Packet(start, out.frame(WRITER_ISN, READER_ISN + 1, SYN | ACK))
        yield Packet(start, back.frame(READER_ISN + 1, WRITER_ISN + 1, ACK))
    kept = bytes(leg.data)
    covered = 0
    last_t = start
    for segment in segments:
        stop = segment.offset + segment.length
        covered, last_t = max(covered, stop), segment.t
        yield from _data(out, segment.t, segment.offset, kept[segment.offset : stop], ack)
    if covered < len(kept):  # writes past the timeline's segment limit: kept, but unlisted
        yield from _data(out, end.t if end else last_t, covered, kept[covered:], ack)
    yield from _close(out, back, timeline, connection, leg.written, end, ack)


def _data(out: Frames, t: float, offset: int, data: bytes, ack: int) -> Iterator[Packet]:
    for at in range(0, len(data), MSS):
        seq = WRITER_ISN + 1 + offset + at
        yield Packet(t, out.frame(seq, ack, PSH | ACK, data[at : at + MSS]))


def _close(
    out: Frames,
    back: Frames,
    timeline: Timeline,
    connection: int,
    written: int,
    end: LegEnd | None,
    ack: int,
) -> Iterator[Packet]:
    seq = WRITER_ISN + 1 + written
    how: str | None = end.how if end else None
    if end is None:  # torn down from the other leg: the proxy closed this socket too
        end = _teardown(timeline, connection)
        how = "fin" if end else None
    if end is None or how == "cancelled":
        return  # still open when the case ended
    if how in ("rst", "peer-rst"):
        yield Packet(end.t, out.frame(seq, ack, RST | ACK))
        return
    yield Packet(end.t, out.frame(seq, ack, FIN | ACK))
    yield Packet(end.t, back.frame(ack, seq + 1, ACK))


def case_packets(timeline: Timeline) -> list[Packet]:
    """Every leg's packets, merged in time order (a leg's own order kept on ties)."""
    packets = [p for key in sorted(timeline.legs) for p in leg_packets(timeline, *key)]
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
