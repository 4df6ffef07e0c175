"""The reference link across reconnects, pauses and a slow consumer, end to end on loopback.

- Reconnect, restart mode: the second connection starts from scratch; the first connection's
  partial message is discarded (``DISCARD_AND_RESET``), never fused with new bytes (catalogue
  cases 31 and 58).
- Reconnect, continue mode over SSE: ``Last-Event-ID`` names the last event the consumer
  dispatched, and the producer continues right after it (or starts over when there is none yet),
  so nothing is lost or repeated: the envelope, verified across both connections, must complete.
  A ``CHECKSUM_MISMATCH`` would mean a frame was lost or repeated, which this design rules out
  at every cut.
- Seed 000's pause: a consumer that pauses mid-message resumes only within
  ``incomplete_message_timeout``.
- Seed 001's bounded buffer (invariant I6): under a slow consumer the producer holds at most
  C_cap + 1 messages.
"""

from __future__ import annotations

import hashlib

import pytest

from reference_impl.framing import FRAMING_NAMES
from reference_impl.link.consumer_config import ConsumerPolicy
from reference_impl.link.spec import LinkSpec, expected_wire, iter_payload
from reference_impl.payload import envelope, messages
from reference_impl.peers.producer import ProducerConfig, ProducerLog
from reference_impl.report import ConnectionSummary
from tests.relay import (
    Cut,
    CutKind,
    LinkRun,
    consumer_config,
    run_link,
    sent_by,
    sent_digests,
    small_link,
    tallied,
)

EXPLICIT_END = frozenset({"sse", "websocket", "grpc", "ndjson-http"})


def accepted_on(run: LinkRun, connection: int) -> list[str]:
    return [a.sha256 for a in run.report.accepted if a.connection == connection]


# --- reconnect, restart mode -------------------------------------------------------------------


@pytest.mark.parametrize("how", ["fin", "rst"])
@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_restart_discards_the_partial_message(framing: str, how: CutKind) -> None:
    link = small_link(framing, "envelope")
    spans = expected_wire(link).spans
    policy = ConsumerPolicy(consumer_config(link), max_reconnects=1)
    run = await run_link(ProducerConfig(link), policy, [Cut(sum(spans[2]) // 2, how), None])
    report = run.report
    assert (report.verdict, report.complete, report.error_code) == ("RESULT_VERIFIED", True, None)
    everything = sent_digests(link)
    assert accepted_on(run, 1) == []  # the abandoned envelope is never handed on
    assert accepted_on(run, 2) == everything
    assert sent_by(run.log.connections[1]) == tallied(everything)
    first, second = report.connections
    assert first.framing_verdict == "DISCARD_AND_RESET"
    assert first.error_code == ("FRAME_TRUNCATED" if how == "fin" else "CONNECTION_RESET")
    assert (second.framing_verdict, second.error_code) == ("MESSAGE_COMPLETE", None)
    assert second.bytes_received == len(run.forwarded[1])
    assert report.recorded.partial_stream_hash == hashlib.sha256(run.forwarded[1]).hexdigest()


async def test_case_58_no_fused_message_after_reconnect() -> None:
    # 00 00 00 0a "hello" FIN, then a new connection: carrying "hello" over would fuse it with
    # the next header into the 10-byte message b"hello\0\0\0\nh".
    texts = ("helloHELLO", "world")
    link = LinkSpec("length-prefixed", "messages", messages.MessagesSpec(texts=texts))
    policy = ConsumerPolicy(consumer_config(link), max_reconnects=1)
    run = await run_link(ProducerConfig(link), policy, [Cut(4 + 5, "fin"), None])
    report = run.report
    assert run.forwarded[0] == b"\x00\x00\x00\x0ahello"
    assert (report.verdict, report.complete) == ("MESSAGE_COMPLETE", False)  # no explicit end
    assert [(a.sha256, a.connection) for a in report.accepted] == [
        (hashlib.sha256(t.encode()).hexdigest(), 2) for t in texts
    ]
    assert report.connections == (
        ConnectionSummary("eof", "DISCARD_AND_RESET", "FRAME_TRUNCATED", 1, 9),
        ConnectionSummary("eof", "MESSAGE_COMPLETE", None, report.connections[1].reads, 23),
    )


# --- reconnect, continue mode over SSE (Last-Event-ID) -------------------------------------


def sse_cuts() -> list[tuple[str, int]]:
    """(name, offset): every kind of place a cut can fall in the small envelope over SSE."""
    spans = expected_wire(small_link("sse", "envelope")).spans
    return [
        ("in-response-head", spans[0][0] // 2),
        ("inside-header-frame", sum(spans[0]) // 2),
        ("after-message-2", spans[1][1]),
        ("inside-message-3", sum(spans[2]) // 2),
        ("inside-trailer", sum(spans[-1]) // 2),
    ]


@pytest.mark.parametrize("how", ["fin", "rst"])
@pytest.mark.parametrize(("where", "offset"), sse_cuts())
async def test_sse_resume_continues_after_the_last_event(
    where: str, offset: int, how: CutKind
) -> None:
    link = small_link("sse", "envelope")
    config = consumer_config(link, resume=True)
    run = await run_link(
        ProducerConfig(link, resume=True),
        ConsumerPolicy(config, max_reconnects=1),
        [Cut(offset, how), None],
    )
    report = run.report
    assert (report.verdict, report.complete, report.error_code) == ("RESULT_VERIFIED", True, None)
    everything = sent_digests(link)
    kept = len(accepted_on(run, 1))
    # Each message exactly once, in order, across the two connections.
    assert accepted_on(run, 1) + accepted_on(run, 2) == everything
    assert sent_by(run.log.connections[1]) == tallied(everything[kept:])
    expected_kept = sum(1 for _, end in expected_wire(link).spans if end - 2 <= offset)
    assert kept == expected_kept
    in_message = where.startswith("inside")
    first = report.connections[0]
    assert first.framing_verdict == ("DISCARD_AND_RESET" if in_message else "MESSAGE_COMPLETE")


# --- seed 000: a pause in the middle of a message ------------------------------------------


def pause_run_args(
    framing: str, timeout_s: float, pause_ms: float
) -> tuple[LinkSpec, int, ConsumerPolicy]:
    """The relay delivers message 1 and half of message 2 in one write and waits until the
    consumer has read it; the consumer reads exactly that much (its read size is the cut), so
    its read ends mid-message and it pauses there."""
    link = small_link(framing, "messages")
    spans = expected_wire(link).spans
    offset = sum(spans[1]) // 2
    config = consumer_config(link, incomplete_message_timeout_s=timeout_s, idle_timeout_s=2.0)
    policy = ConsumerPolicy(config, read_bytes=offset, pause_at_message=1, pause_ms=pause_ms)
    return link, offset, policy


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_short_pause_resumes_the_message(framing: str) -> None:
    link, offset, policy = pause_run_args(framing, timeout_s=0.2, pause_ms=10)
    run = await run_link(ProducerConfig(link), policy, [Cut(offset, "pause")])
    report = run.report
    complete = framing in EXPLICIT_END
    assert (report.verdict, report.complete, report.error_code) == (
        "MESSAGE_COMPLETE",
        complete,
        None,
    )
    assert [a.sha256 for a in report.accepted] == sent_digests(link)
    assert report.connections[0].end == ("stream-end" if complete else "eof")
    assert 0.01 <= run.seconds < 1.0


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_long_pause_goes_stale(framing: str) -> None:
    link, offset, policy = pause_run_args(framing, timeout_s=0.05, pause_ms=100)
    run = await run_link(ProducerConfig(link), policy, [Cut(offset, "pause")])
    report = run.report
    stale = "STALE_PARTIAL_BUFFER"
    assert (report.verdict, report.complete, report.error_code) == (stale, False, "IDLE_TIMEOUT")
    assert [a.sha256 for a in report.accepted] == sent_digests(link)[:1]
    assert report.connections == (
        ConnectionSummary("paused-stale", stale, "IDLE_TIMEOUT", 1, offset),
    )
    assert report.recorded.partial_buffer_state_hash is not None
    assert 0.1 <= run.seconds < 1.0


# --- seed 001 / I6: bounded buffering under a slow consumer --------------------------------


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_slow_consumer_bounds_what_the_producer_holds(framing: str) -> None:
    link = LinkSpec(framing, "envelope", envelope=envelope.EnvelopeSpec(2000, 50))
    total = len(list(iter_payload(link)))  # header, 40 chunks, trailer
    seen: list[tuple[int, int]] = []

    def snapshot(log: ProducerLog) -> None:
        (conn,) = log.connections
        seen.append((conn.sent.count, conn.max_held))

    # The relay stops reading after 4 KiB, through a 4 KiB receive buffer, until every task is
    # blocked: the producer is then stuck on a full socket, its traversal on a full channel.
    run = await run_link(
        ProducerConfig(link, channel_capacity=2),
        ConsumerPolicy(consumer_config(link), read_bytes=1024),
        [Cut(4096, "pause")],
        upstream_rcvbuf=4096,
        on_pause=snapshot,
    )
    ((written, held),) = seen
    assert written < total - 3  # backpressure reached the producer long before the end
    assert held == 3  # C_cap + 1: the bound is reached, and kept
    assert run.log.connections[0].max_held == 3
    assert run.report.verdict == "RESULT_VERIFIED"
    assert [a.sha256 for a in run.report.accepted] == sent_digests(link)
