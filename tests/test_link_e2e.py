"""The reference link end to end on loopback: producer -> relay -> consumer, clean and cut.

Every run goes through ``tests/relay.py`` on ports chosen by the OS. Offsets come from
``expected_wire``: the producer's bytes are deterministic (only WebSocket's accept key differs
per connection, never its length), so a cut at offset k lands where the dry run says it does.
"""

from __future__ import annotations

import errno
import hashlib

import pytest
import trio

from reference_impl.errors import ErrorCode
from reference_impl.framing import FRAMING_NAMES
from reference_impl.link.consumer_config import ConsumerPolicy
from reference_impl.link.spec import ExpectedWire, LinkSpec, expected_wire, iter_payload
from reference_impl.peers.consumer import run_consumer
from reference_impl.peers.producer import ProducerConfig
from reference_impl.report import ConnectionSummary, ConsumerReport
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

DELIMITERS = {
    "length-prefixed": "u32be-length-prefix",
    "ndjson": "LF",
    "sse": "blank-line",
    "websocket": "websocket-frame-fin",
    "grpc": "grpc-5-byte-prefix",
    "ndjson-http": "LF",
}
#: what each framing's explicit end says (``StreamEnd.detail``); the line framings have none
END_DETAILS = {"sse": "", "websocket": "close 1000", "grpc": "grpc-status 0", "ndjson-http": ""}
#: the framings whose explicit end is needed to call a stream of opaque messages complete
EXPLICIT_END = frozenset(END_DETAILS)
#: the framing verdict of a connection cut inside a message: it can never deliver the rest
STALE = "STALE_PARTIAL_BUFFER"
CLEAN = "MESSAGE_COMPLETE"

PAYLOADS = [
    ("messages", "generic"),
    ("envelope", "generic"),
    ("tokens", "generic"),
    ("tokens", "openai"),
    ("tokens", "anthropic"),
]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digests(run: LinkRun) -> list[str]:
    return [a.sha256 for a in run.report.accepted]


def assert_relayed(run: LinkRun, wire: ExpectedWire, count: int | None = None) -> None:
    """The relay wrote the first ``count`` bytes of the expected wire (all when None), and the
    consumer's ``partial_stream_hash`` and byte count describe exactly those bytes."""
    (forwarded,) = run.forwarded
    expected = wire.wire[: len(wire.wire) if count is None else count]
    if b"Sec-WebSocket-Accept" in expected:  # a hash of the client's random key: same length
        handshake = wire.spans[0][0]
        forwarded, expected = forwarded[handshake:], expected[handshake:]
    assert forwarded == expected
    assert run.report.recorded.partial_stream_hash == sha(run.forwarded[0])
    assert run.report.connections[0].bytes_received == len(run.forwarded[0])


# --- clean: every framing x payload ---------------------------------------------------------


def completion_receipt(link: LinkSpec) -> str | None:
    if link.payload == "envelope":
        return f"trailer EOS_FINALIZED {link.envelope.checksum()}"
    if link.payload == "tokens":
        *_, signal = iter_payload(link)
        return f"{link.tokens.profile}: {signal.data.decode()}"
    return END_DETAILS.get(link.framing)


@pytest.mark.parametrize(("payload", "profile"), PAYLOADS)
@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_clean_stream(framing: str, payload: str, profile: str) -> None:
    link = small_link(framing, payload, profile)
    run = await run_link(ProducerConfig(link), ConsumerPolicy(consumer_config(link)))
    report = run.report
    # Opaque messages on a line framing have no explicit end: termination is all there is.
    proven = payload != "messages" or framing in EXPLICIT_END
    verdict = {"messages": CLEAN, "envelope": "RESULT_VERIFIED", "tokens": "COMPLETE_EXPLICIT"}
    assert (report.verdict, report.complete, report.error_code) == (verdict[payload], proven, None)
    assert digests(run) == sent_digests(link)
    assert [sent_by(c) for c in run.log.connections] == [tallied(sent_digests(link))]
    assert {a.connection for a in report.accepted} == {1}
    assert [c.completed for c in run.log.connections] == [True]
    assert_relayed(run, expected_wire(link))
    end = "stream-end" if framing in EXPLICIT_END else "eof"
    assert report.connections == (
        ConnectionSummary(end, CLEAN, None, report.reads, len(run.forwarded[0])),
    )
    recorded = report.recorded
    assert recorded.message_boundary_delimiter == DELIMITERS[framing]
    assert recorded.incomplete_message_timeout == 0.5
    assert recorded.stream_completion_signal_receipt == completion_receipt(link)
    assert (recorded.partial_buffer_state_hash, recorded.expected_message_size) == (None, None)
    assert recorded.expected_stream_length_hint == (5 if payload == "envelope" else None)
    predicate = "NONE" if proven else f"RESUME_AFTER_MESSAGE:{len(report.accepted)}"
    assert recorded.stream_recovery_predicate == predicate


# --- FIN and RST: fail closed, accept an exact prefix ----------------------------------------

WHERE = ("boundary", "inside", "last")


def cut_point(wire: ExpectedWire, where: str) -> tuple[int, int]:
    """The offset to cut at, and how many messages are whole before it."""
    spans = wire.spans
    if where == "boundary":  # right after message 2
        return spans[1][1], 2
    if where == "inside":  # halfway through message 3
        return sum(spans[2]) // 2, 2
    return sum(spans[-1]) // 2, len(spans) - 1  # halfway through the proof of the end


def connection_error(framing: str, how: CutKind, at_boundary: bool) -> str | None:
    if how == "rst":
        return "CONNECTION_RESET"
    if not at_boundary:
        return "FRAME_TRUNCATED"
    return "STREAM_END_MISSING" if framing in EXPLICIT_END else None


def recovery_predicate(payload: str, whole: int) -> str:
    if payload == "tokens":
        return "REFETCH_ALL"  # a generation is never resumed mid-way
    chunks = whole - 1  # the header came first
    return f"REFETCH_FROM_SEQUENCE:{chunks + 1}" if chunks else "REFETCH_ALL"


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("how", ["fin", "rst"])
@pytest.mark.parametrize("payload", ["envelope", "tokens"])
@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_cut_fails_closed(framing: str, payload: str, how: CutKind, where: str) -> None:
    link = small_link(framing, payload)
    wire = expected_wire(link)
    offset, whole = cut_point(wire, where)
    run = await run_link(
        ProducerConfig(link), ConsumerPolicy(consumer_config(link)), [Cut(offset, how)]
    )
    report = run.report
    at_boundary = where == "boundary"
    error = connection_error(framing, how, at_boundary)
    framing_verdict = CLEAN if at_boundary else STALE
    if payload == "envelope":
        truncated = "ERR_ZPARQL_STREAM_TRUNCATED"
        assert (report.verdict, report.error_code) == (truncated, truncated)
    else:
        assert (report.verdict, report.error_code) == ("PARTIAL_MID_TOKEN", error)
    assert report.complete is False
    assert digests(run) == []  # a refused result hands nothing on
    (conn,) = run.log.connections
    assert conn.sent.count >= whole
    assert_relayed(run, wire, offset)
    assert report.connections == (
        ConnectionSummary(
            "eof" if how == "fin" else "rst", framing_verdict, error, report.reads, offset
        ),
    )
    assert report.framing_verdict == framing_verdict
    assert (report.recorded.partial_buffer_state_hash is None) is at_boundary
    assert report.recorded.stream_recovery_predicate == recovery_predicate(payload, whole)


# --- a stall inside a message: seed 000's incomplete_message_timeout -------------------------


def payload_start(link: LinkSpec, wire: ExpectedWire, index: int) -> int:
    """Offset of the first byte of message ``index`` that its codec keeps as ``partial()``:
    the event text for SSE and the line of NDJSON over HTTP (after the HTTP chunk-size line),
    the message data elsewhere."""
    start, _ = wire.spans[index]
    if link.framing in ("sse", "ndjson-http"):
        return wire.wire.index(b"\r\n", start) + 2
    data = list(iter_payload(link))[index].data
    return wire.wire.index(data, start)


ANNOUNCED = frozenset({"length-prefixed", "websocket", "grpc"})


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_stall_inside_a_message_goes_stale(framing: str) -> None:
    link = small_link(framing, "messages")
    wire = expected_wire(link)
    start = payload_start(link, wire, 1)
    offset = start + 10  # inside message 2's data
    config = consumer_config(link, incomplete_message_timeout_s=0.05, idle_timeout_s=1.0)
    run = await run_link(ProducerConfig(link), ConsumerPolicy(config), [Cut(offset, "stall")])
    report = run.report
    assert (report.verdict, report.complete, report.error_code) == (STALE, False, "IDLE_TIMEOUT")
    assert report.connections == (
        ConnectionSummary("timeout", STALE, "IDLE_TIMEOUT", report.reads, offset),
    )
    # The partial-message timeout fired, not the idle one.
    assert 0.05 <= run.seconds < 1.0
    assert digests(run) == sent_digests(link)[:1]
    assert report.recorded.partial_buffer_state_hash == sha(wire.wire[start:offset])
    data = list(iter_payload(link))[1].data
    assert report.recorded.expected_message_size == (len(data) if framing in ANNOUNCED else None)
    assert report.directive is not None and report.directive.startswith("HALT: Partial buffer")
    assert_relayed(run, wire, offset)


# --- nobody there, or nobody talking ---------------------------------------------------------


async def test_connect_failure_is_a_report() -> None:
    link = small_link("sse", "envelope")
    with trio.socket.socket() as sock:  # bound, never listening: the port refuses connections
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        start = trio.current_time()
        with trio.fail_after(1):
            report = await run_consumer("127.0.0.1", port, ConsumerPolicy(consumer_config(link)))
        assert trio.current_time() - start < 0.5
    failed = "CONNECT_FAILED"
    assert report == ConsumerReport(failed, False, failed, detail=report.detail)


@pytest.mark.parametrize("framing", FRAMING_NAMES)
async def test_silent_producer_times_out(framing: str) -> None:
    link = small_link(framing, "envelope")
    # The kernel completes the handshake on a listening socket; nobody ever accepts or answers.
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with listener:
        port = listener.socket.getsockname()[1]
        config = consumer_config(link, idle_timeout_s=0.05)
        start = trio.current_time()
        with trio.fail_after(1):
            report = await run_consumer("127.0.0.1", port, ConsumerPolicy(config))
        assert 0.05 <= trio.current_time() - start < 0.5
    truncated = ErrorCode.ERR_ZPARQL_STREAM_TRUNCATED.value
    assert (report.verdict, report.complete, report.error_code) == (truncated, False, truncated)
    assert report.connections == (ConnectionSummary("timeout", CLEAN, "IDLE_TIMEOUT", 0, 0),)
    assert report.accepted == ()


async def test_a_reset_that_wins_the_race_with_connect_is_a_reset_not_a_failed_connect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A kill at byte 0 can reset the connection before trio checks the connect's outcome; trio
    # then reports "all attempts failed" with the ECONNRESET as the cause.
    async def reset_during_connect(host: str, port: int) -> trio.SocketStream:
        cause = ExceptionGroup("attempts", [ConnectionResetError(errno.ECONNRESET, "reset")])
        raise OSError("all attempts to connect failed") from cause

    monkeypatch.setattr(trio, "open_tcp_stream", reset_during_connect)
    link = small_link("websocket", "envelope")
    report = await run_consumer("127.0.0.1", 9, ConsumerPolicy(consumer_config(link)))
    assert (report.verdict, report.error_code, report.complete) == (
        "ERR_ZPARQL_STREAM_TRUNCATED",
        "ERR_ZPARQL_STREAM_TRUNCATED",
        False,
    )
    assert [c.error_code for c in report.connections] == ["CONNECTION_RESET"]
