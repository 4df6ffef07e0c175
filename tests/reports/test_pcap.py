"""pcap files: tshark reads them back, checksums hold, and each conversation reassembles to
exactly the bytes the timeline kept: what the proxy wrote on a leg, and what it read from the
same peer (the consumer's request; the producer's stream as it arrived, before any fault)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.artifacts.pcap import (
    MSS,
    OTHER_DIRECTION,
    Frames,
    case_packets,
    endpoints,
    write_pcap,
)
from harness.evidence.timeline import HowEnded, Timeline
from harness.judging.results import CaseResult
from tests.reports.conftest import DATA, by_name, tool

Leg = tuple[int, str]
HEX = re.compile(r"\s*[0-9a-f]+$")


def tshark_conversations(path: Path, legs: Sequence[Leg]) -> dict[Leg, tuple[bytes, bytes]]:
    """Follow the TCP stream each leg is written on, in one tshark run: per leg, the bytes
    tshark reassembled from the proxy, and from the peer."""
    args = [tool("tshark"), "-r", str(path), "-q"]
    for connection, direction in legs:
        writer, reader, _ = endpoints(connection, direction)
        args += ["-z", f"follow,tcp,raw,127.0.0.1:{writer},127.0.0.1:{reader}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    found: dict[Leg, tuple[bytes, bytes]] = {}
    for block in out.split("Follow: tcp,raw")[1:]:
        lines = block.strip("\n=").splitlines()
        nodes = [int(line.rsplit(":", 1)[1]) for line in lines if line.startswith("Node ")]
        leg = next(leg for leg in legs if set(endpoints(*leg)[:2]) == set(nodes))
        # node 1's lines are indented with a tab, node 0's are not
        sent = {0: "", 1: ""}
        for line in lines:
            if HEX.match(line):
                sent[1 if line.startswith("\t") else 0] += line.strip()
        by_port = {nodes[i]: bytes.fromhex(sent[i]) for i in (0, 1)}
        writer, reader, _ = endpoints(*leg)
        found[leg] = (by_port[writer], by_port[reader])
    return found


def tshark_legs(path: Path, legs: Sequence[Leg]) -> dict[Leg, bytes]:
    """The bytes the proxy wrote on each leg, as tshark reassembled them."""
    return {leg: sent for leg, (sent, _) in tshark_conversations(path, legs).items()}


def kept(timeline: Timeline, leg: Leg) -> tuple[bytes, bytes]:
    """What the timeline kept of a leg's conversation: the proxy's writes on it, and what it
    read from the same peer (the other leg's source)."""
    connection, direction = leg
    other = timeline.legs.get((connection, OTHER_DIRECTION[direction]))
    mine = timeline.legs.get(leg)
    return (
        b"" if mine is None else bytes(mine.data),
        b"" if other is None else bytes(other.source),
    )


def tshark_fields(path: Path, *fields: str) -> list[list[str]]:
    args = [tool("tshark"), "-r", str(path), "-o", "tcp.check_checksum:TRUE"]
    args += ["-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=;"]
    for name in fields:
        args += ["-e", name]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split(";") for line in out.splitlines()]


@pytest.mark.parametrize("scenario", ["rst-in-chunk", "reconnect", "ws-split", "hung"])
def test_report_pcaps_reassemble_to_the_kept_bytes(
    scenario: str, results: Sequence[CaseResult], report_dir: Path
) -> None:
    result = by_name(results, scenario)
    index = list(results).index(result)
    path = next((report_dir / "pcaps").glob(f"{index:04d}-*.pcap"))
    legs = [key for key, leg in sorted(result.timeline.legs.items()) if leg.written]
    assert legs, "the case wrote bytes"
    timeline = result.timeline
    assert tshark_conversations(path, legs) == {key: kept(timeline, key) for key in legs}
    # both conversations of the first connection: the consumer's request as the proxy read
    # it, and the producer's stream as the proxy read it (before any fault)
    request, stream = kept(timeline, (1, "downstream"))[1], kept(timeline, (1, "upstream"))[1]
    http = result.framing in ("sse", "websocket")
    assert (request.startswith(b"GET "), stream.startswith(b"HTTP/1.1 ")) == (http, http)
    assert len(stream) == timeline.legs[(1, "downstream")].source_read > 0
    # every packet's IP and TCP checksums verify (status 1 = good)
    statuses = tshark_fields(path, "ip.checksum.status", "tcp.checksum.status")
    assert {tuple(row) for row in statuses} == {("1", "1")}


def test_leg_ends_become_fin_or_rst(results: Sequence[CaseResult], report_dir: Path) -> None:
    result = by_name(results, "rst-in-chunk")
    index = list(results).index(result)
    path = next((report_dir / "pcaps").glob(f"{index:04d}-*.pcap"))
    rows = tshark_fields(path, "tcp.srcport", "tcp.flags.str", "tcp.seq")
    written = result.timeline.legs[(1, "downstream")].written
    proxy = str(endpoints(1, "downstream")[0])
    assert [r[0] for r in rows if "R" in r[1]] == [proxy]
    assert [int(r[2]) for r in rows if "R" in r[1]] == [written + 1]


def _timeline() -> Timeline:
    """Two connections by hand: a write past MSS, a capped leg, RST from the producer, a FIN;
    every byte written was read first (the request from the consumer, the rest from the
    producer)."""
    timeline = Timeline(max_bytes_per_leg=150_000)
    timeline.read(0.0005, 1, "upstream", b"GET / HTTP/1.1\r\n\r\n")
    timeline.wrote(0.001, 1, "upstream", b"GET / HTTP/1.1\r\n\r\n")
    timeline.read(0.0015, 1, "downstream", bytes(range(256)) * 600)  # 153,600 B, capped
    timeline.wrote(0.002, 1, "downstream", bytes(range(256)) * 600)
    timeline.read(0.0025, 1, "downstream", b"tail")
    timeline.wrote(0.003, 1, "downstream", b"tail")
    timeline.ended(0.004, 1, "downstream", HowEnded.PEER_RST, 153_604)
    timeline.read(0.0095, 2, "downstream", b"second connection\n")
    timeline.wrote(0.010, 2, "downstream", b"second connection\n")
    timeline.ended(0.011, 2, "downstream", HowEnded.EOF, 18)
    return timeline


def test_capped_leg_keeps_its_prefix_and_shows_the_gap(tmp_path: Path) -> None:
    timeline = _timeline()
    path = tmp_path / "hand.pcap"
    count = write_pcap(timeline, path, base_time=1_700_000_000.0)
    legs: list[Leg] = [(1, "upstream"), (1, "downstream"), (2, "downstream"), (2, "upstream")]
    assert tshark_conversations(path, legs) == {key: kept(timeline, key) for key in legs}
    assert len(timeline.legs[(1, "downstream")].data) == 150_000
    assert len(timeline.legs[(1, "downstream")].source) == 150_000
    rows = tshark_fields(path, "frame.time_epoch", "tcp.len", "tcp.flags.str", "tcp.seq")
    # conn 1, proxy and producer: handshake, request, the kept 150,000 B the producer sent in
    # MSS-sized packets, its RST (nothing more is sent on a reset socket)
    # conn 1, consumer and proxy: handshake, request, the kept 150,000 B again, RST
    # conn 2, both: handshake, one write, FIN+ACK (conn 2 has no request)
    assert len(rows) == count == (3 + 1 + 3 + 1) + (3 + 1 + 3 + 1) + (3 + 1 + 2) * 2
    sizes = [int(r[1]) for r in rows if int(r[1]) > 1000]
    assert sizes == [MSS, MSS, 150_000 - 2 * MSS] * 2
    rst = next(r for r in rows if "R" in r[2])
    assert int(rst[3]) == 153_604 + 1  # every written byte counted, kept or not
    assert float(rows[0][0]) == pytest.approx(1_700_000_000.001)


def test_writes_past_the_segment_limit_are_still_captured(tmp_path: Path) -> None:
    timeline = Timeline(max_segments=2)
    for i in range(5):
        timeline.wrote(i / 1000, 1, "downstream", f"message {i}\n".encode())
    timeline.ended(0.006, 1, "downstream", HowEnded.EOF, 50)
    assert timeline.segments_dropped == 3
    path = tmp_path / "dropped.pcap"
    write_pcap(timeline, path)
    leg = timeline.legs[(1, "downstream")]
    assert tshark_legs(path, [(1, "downstream")]) == {(1, "downstream"): bytes(leg.data)}
    assert len(leg.data) == leg.written == 50


def test_handshake_order_and_sequence_numbers() -> None:
    timeline = Timeline()
    timeline.wrote(0.5, 1, "upstream", b"hello")
    timeline.ended(0.6, 1, "upstream", HowEnded.HALF, 5)
    flags = [p.frame[47] for p in case_packets(timeline)]
    syn, ack, psh, fin = 0x02, 0x10, 0x08, 0x01
    # the proxy opened the leg to the producer: SYN, SYN-ACK, ACK, data, FIN, ACK
    assert flags == [syn, syn | ack, ack, psh | ack, fin | ack, ack]
    assert [p.t for p in case_packets(timeline)] == [0.5, 0.5, 0.5, 0.5, 0.6, 0.6]


def test_scapy_is_imported_only_for_pcaps(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from harness.running.execute import run_all\n"
        "from harness.artifacts.writer import write_pcaps, write_reports\n"
        "from harness.cli.scenario import load_cases\n"
        f"results = run_all(load_cases([{str(DATA / 'mixed.yaml')!r}], 'rst-in-chunk'))\n"
        f"write_reports(results, {str(tmp_path)!r}, pcap='failing', elapsed_s=0, command=[])\n"
        "before = any(m.startswith('scapy') for m in sys.modules)\n"
        f"write_pcaps(results, Path({str(tmp_path)!r}), 'all', 0.0)\n"
        "print(before, any(m.startswith('scapy') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_a_capped_leg_is_flagged_as_incomplete(tmp_path: Path) -> None:
    timeline = Timeline(max_bytes_per_leg=100)
    timeline.wrote(0.1, 1, "downstream", b"x" * 150)
    timeline.ended(0.2, 1, "downstream", HowEnded.EOF, 150)
    path = tmp_path / "capped.pcap"
    write_pcap(timeline, path)
    rows = tshark_fields(path, "tcp.flags.str", "tcp.seq", "tcp.analysis.lost_segment")
    fin = next(r for r in rows if r[0].endswith("F"))
    assert fin[1:] == ["151", "1"]  # FIN after all 150 bytes; tshark saw the missing 50


def test_frames_are_what_scapy_builds() -> None:
    from scapy.layers.inet import IP, TCP  # noqa: PLC0415 - the reference, for this test only
    from scapy.layers.l2 import Ether  # noqa: PLC0415
    from scapy.packet import Raw  # noqa: PLC0415

    for seq, ack, flags, payload in [
        (1_000_000, 0, "S", b""),
        (1_000_001, 5_000_001, "PA", b"hello, world"),
        (4_294_967_295, 5_000_001, "FA", b""),
        (7, 9, "RA", b""),
    ]:
        reference = (
            Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
            / IP(src="127.0.0.1", dst="127.0.0.1", flags="DF", ttl=64, id=0)
            / TCP(sport=8080, dport=40001, seq=seq, ack=ack, flags=flags, window=65535)
        )
        if payload:
            reference = reference / Raw(payload)
        bits = int(TCP(flags=flags).flags)
        assert Frames(8080, 40001).frame(seq, ack, bits, payload) == bytes(reference)
