"""The pcap of a recording (``tearline record --pcap``): the exchange as one TCP connection.

The consumer ``127.0.0.1:40001`` talks to the producer ``127.0.0.1:<its recorded port>``
(8081 when the port is unknown): the consumer's SYN, the handshake, then one segment (split
at the MSS) per recorded read at its recorded time, each side's sequence numbers counting the
bytes it sent and acknowledging the other's, and each side's FIN (acknowledged) or RST as
recorded. The payloads are the recorded reads, byte for byte: what the proxy read from each
socket, not a re-encoding by the codecs. The frames are packed by the reports' pcap module
(``harness/artifacts/pcap.py``), which imports scapy only when a file is written.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from harness.artifacts.pcap import (
    ACK,
    CONSUMER_PORT_BASE,
    FIN,
    MSS,
    PRODUCER_PORT,
    PSH,
    READER_ISN,
    RST,
    SYN,
    WRITER_ISN,
    Frames,
    Packet,
    write_packets,
)
from harness.record.format import End, Read, Recording, Side

CONSUMER_PORT = CONSUMER_PORT_BASE + 1
OTHER: dict[Side, Side] = {"consumer": "producer", "producer": "consumer"}


def producer_port(upstream: str) -> int:
    """The port of ``host:port`` (``[v6]:port``), or the reports' producer port."""
    _, _, port = upstream.rpartition(":")
    return int(port) if port.isdigit() and 0 < int(port) <= 65535 else PRODUCER_PORT


class _Conversation:
    def __init__(self, port: int) -> None:
        self.frames: dict[Side, Frames] = {
            "consumer": Frames(CONSUMER_PORT, port),
            "producer": Frames(port, CONSUMER_PORT),
        }
        # the consumer opens the connection, so its numbers are the reports' writer's
        self.isn: dict[Side, int] = {"consumer": WRITER_ISN, "producer": READER_ISN}
        #: sequence space each side used: its bytes, plus one for its FIN
        self.used: dict[Side, int] = {"consumer": 0, "producer": 0}

    def seq(self, side: Side) -> int:
        return self.isn[side] + 1 + self.used[side]

    def packet(self, t: float, side: Side, flags: int, payload: bytes = b"") -> Packet:
        frame = self.frames[side].frame(self.seq(side), self.seq(OTHER[side]), flags, payload)
        return Packet(t, frame)

    def handshake(self) -> list[Packet]:
        consumer, producer = self.frames["consumer"], self.frames["producer"]
        c, p = self.isn["consumer"], self.isn["producer"]
        return [
            Packet(0.0, consumer.frame(c, 0, SYN)),
            Packet(0.0, producer.frame(p, c + 1, SYN | ACK)),
            Packet(0.0, consumer.frame(c + 1, p + 1, ACK)),
        ]

    def read(self, t: float, read: Read) -> list[Packet]:
        packets = []
        for at in range(0, len(read.data), MSS):
            piece = read.data[at : at + MSS]
            packets.append(self.packet(t, read.side, PSH | ACK, piece))
            self.used[read.side] += len(piece)
        return packets

    def end(self, t: float, end: End) -> list[Packet]:
        if end.how == "rst":
            return [self.packet(t, end.side, RST | ACK)]
        fin = self.packet(t, end.side, FIN | ACK)
        self.used[end.side] += 1
        return [fin, self.packet(t, OTHER[end.side], ACK)]


def recording_packets(recording: Recording) -> list[Packet]:
    """The packets of the recorded exchange, in time order; ``t`` in seconds since the
    connection opened."""
    conversation = _Conversation(producer_port(recording.meta.upstream))
    packets = conversation.handshake()
    for event in recording.events:
        t = event.t_ms / 1000
        if isinstance(event, Read):
            packets += conversation.read(t, event)
        else:
            packets += conversation.end(t, event)
    return packets


def _epoch(created: str) -> float:
    try:
        return datetime.fromisoformat(created).timestamp()
    except ValueError:  # an edited header: the capture then starts at the epoch
        return 0.0


def write_recording_pcap(recording: Recording, path: str | Path) -> int:
    """Write the capture of ``recording``; returns the number of packets."""
    packets = recording_packets(recording)
    write_packets(packets, path, base_time=_epoch(recording.meta.created))
    return len(packets)
