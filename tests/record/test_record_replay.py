"""Record an exchange with the reference producer through the proxy, then replay it: as raw
bytes, as a scenario's producer (clean, and with a frame-positioned fault), and as a pcap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import trio
from scapy.layers.inet import TCP
from scapy.packet import Packet
from scapy.utils import rdpcap

from harness.artifacts.capture import CONSUMER_PORT, write_recording_pcap
from harness.judging.results import Outcome
from harness.link.reference import link_spec, producer_config
from harness.proxy.tlsio import alpn_offer
from harness.record.format import Recording, dumps
from harness.running.case import run_case
from harness.running.certificates import run_authority
from harness.running.recorder import record
from harness.running.replay import ReplayProducer
from harness.scenario import Case, Link, expand, load_text
from harness.scenario.model import EnvelopeConfig, ProducerConfig
from reference_impl.framing import FRAMING_NAMES, FramingName
from reference_impl.payload import PayloadName
from reference_impl.peers.producer import Producer

ENVELOPE = EnvelopeConfig(records=20, chunk_records=5)
DEADLINE_S = 10.0


def _link(framing: str, upstream: str | None = None) -> Link:
    producer = ProducerConfig(upstream=upstream)
    return Link(FramingName(framing), PayloadName.ENVELOPE, envelope=ENVELOPE, producer=producer)


async def _record(framing: str) -> Recording:
    """One exchange of the reference consumer with the reference producer."""
    link = _link(framing)
    producer = Producer(producer_config(link, link_spec(link)))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(producer.serve, "127.0.0.1", 0)
        recorded = await record(_link(framing, f"127.0.0.1:{port}"), DEADLINE_S)
        nursery.cancel_scope.cancel()
    assert (recorded.problem, recorded.ignored) == ("", 0)
    assert recorded.report is not None and recorded.report.verdict == "RESULT_VERIFIED"
    return recorded.recording


async def _ask(port: int, request: bytes) -> bytes:
    """Send ``request``, read until the other side's end."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        got = b""
        while data := await stream.receive_some(65536):
            got += data
        return got


def _case(tmp_path: Path, recording: Recording, faults: str, expect: str) -> Case:
    path = tmp_path / "r.tlrec"
    path.write_bytes(dumps(recording))
    framing = recording.meta.framing
    text = (
        "name: replayed\n"
        "description: a recorded stream, replayed\n"
        f"link: {{framing: {framing}, payload: envelope,"
        " envelope: {records: 20, chunk_records: 5},"
        f" producer: {{replay: '{path}', speed: 0}}}}\n"
        f"faults: {faults}\n"
        f"expect: {expect}\n"
    )
    (scenario,) = load_text(text, str(tmp_path / "s.yaml"))
    (case,) = expand(scenario, lambda _: pytest.fail("no sweep here"))
    return case


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_the_recording_holds_exactly_what_the_producer_sends(framing: str) -> None:
    recording = await _record(framing)
    assert recording.meta.framing == framing
    assert recording.end_of("producer") is not None
    link = _link(framing)
    producer = Producer(producer_config(link, link_spec(link)))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(producer.serve, "127.0.0.1", 0)
        direct = await _ask(port, recording.sent("consumer"))
        nursery.cancel_scope.cancel()
    if framing != "grpc":  # h2 answers a request with frames it builds as the request comes
        assert recording.sent("producer") == direct


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_the_replay_sends_exactly_the_recorded_bytes(framing: str) -> None:
    recording = await _record(framing)
    replay = ReplayProducer(recording, speed=0)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(replay.serve, "127.0.0.1", 0)
        got = await _ask(port, recording.sent("consumer"))
        nursery.cancel_scope.cancel()
    assert got == recording.sent("producer")


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_a_replayed_link_passes_clean_for_the_reference_consumer(
    framing: str, tmp_path: Path
) -> None:
    case = _case(
        tmp_path,
        await _record(framing),
        "[]",
        "{verdict: RESULT_VERIFIED, complete: true}",
    )
    result = await run_case(case)
    assert result.outcome is Outcome.PASS, result.diagnosis
    judged = {check.name: check.ok for check in result.checks}
    assert judged["I1"] is True  # what the producer sent is known: read from the wire


@pytest.mark.parametrize("framing", ["sse", "length-prefixed", "websocket", "ndjson"])
async def test_a_frame_positioned_fault_lands_on_the_replayed_stream(
    framing: str, tmp_path: Path
) -> None:
    case = _case(
        tmp_path,
        await _record(framing),
        "[{kind: kill, how: rst, at: {frame: 3, fraction: 0.5}}]",
        "{verdict: ERR_ZPARQL_STREAM_TRUNCATED, complete: false, accepted_messages: 0}",
    )
    result = await run_case(case)
    assert result.outcome is Outcome.PASS, result.diagnosis
    (fault,) = result.timeline.faults
    assert fault.name == "kill"


@pytest.mark.parametrize("framing", ["sse", "grpc"])
async def test_an_https_producer_is_recorded_in_plaintext_and_replays_over_tls(
    framing: str, tmp_path: Path
) -> None:
    """TLS to the producer when recording; the recording holds the plaintext, which a link
    with ``tls: true`` replays (the replay then speaks TLS as the reference producer does)."""
    authority = run_authority()
    link = _link(framing)
    producer = Producer(producer_config(link, link_spec(link)))
    server = authority.server_context(alpn_offer(framing))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(producer.serve, tls=server), "127.0.0.1", 0)
        secure = replace(
            _link(framing),
            producer=ProducerConfig(
                upstream=f"https://127.0.0.1:{port}", upstream_ca=str(authority.ca_file)
            ),
        )
        recorded = await record(secure, DEADLINE_S)
        nursery.cancel_scope.cancel()
    assert recorded.report is not None and recorded.report.verdict == "RESULT_VERIFIED"
    recording = recorded.recording
    sent = recording.sent("producer")
    if framing == "sse":  # plaintext: the HTTP response, not a TLS record
        assert sent.startswith(b"HTTP/1.1 200")
    else:  # plaintext: an HTTP/2 SETTINGS frame (type 4), not a TLS record (type 23)
        assert sent[3] == 4
    case = _case(tmp_path, recording, "[]", "{verdict: RESULT_VERIFIED, complete: true}")
    case = replace(
        case, scenario=replace(case.scenario, link=replace(case.scenario.link, tls=True))
    )
    result = await run_case(case)
    assert result.outcome is Outcome.PASS, result.diagnosis


async def test_a_recording_broken_after_loading_is_an_error_naming_it(tmp_path: Path) -> None:
    case = _case(tmp_path, await _record("sse"), "[]", "{verdict: RESULT_VERIFIED}")
    path = tmp_path / "r.tlrec"
    path.write_bytes(path.read_bytes()[:-10])
    result = await run_case(case)
    assert result.outcome is Outcome.ERROR
    assert str(path) in result.diagnosis
    assert "\n" not in result.diagnosis


def _stream(packets: Sequence[Packet], sport: int) -> bytes:
    """The payload one port sent, reassembled by sequence number."""
    segments = [p[TCP] for p in packets if TCP in p]
    pieces = {s.seq: bytes(s.payload) for s in segments if s.sport == sport and s.payload}
    return b"".join(pieces[seq] for seq in sorted(pieces))


@pytest.mark.parametrize("framing", ["sse", "grpc"])
async def test_the_pcap_holds_the_recorded_bytes_of_both_sides(
    framing: str, tmp_path: Path
) -> None:
    recording = await _record(framing)
    path = tmp_path / "r.pcap"
    count = write_recording_pcap(recording, path)
    packets = list(rdpcap(str(path)))
    assert len(packets) == count
    producer_port = int(recording.meta.upstream.rpartition(":")[2])
    assert _stream(packets, CONSUMER_PORT) == recording.sent("consumer")
    assert _stream(packets, producer_port) == recording.sent("producer")
    flags = [str(p[TCP].flags) for p in packets]
    assert flags[0] == "S"
    assert "FA" in flags
