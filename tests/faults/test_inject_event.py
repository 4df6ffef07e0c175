"""inject_event: an event of the link's token profile written before a frame, framed as the
link's own producer frames a message; every producer byte still delivered, in order."""

from __future__ import annotations

import pytest

from harness.errors import FieldError
from harness.faults import FAULTS, InjectEvent
from harness.faults.inject_event import event_problem, framed
from harness.faults.items import Chunk, Heartbeat
from harness.faults.stage import LinkShape
from harness.link.live import LinkTraits, LiveStream
from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message
from reference_impl.framing import FramingOptions
from reference_impl.payload.catalogue import CATALOGUE, injected_event
from reference_impl.payload.tokens import TokenStreamSpec, TokenTracker, iter_messages
from tests.faults.conftest import chunks, run_fault
from tests.wire import decode, produce_wire

FRAMINGS = ("sse", "ndjson", "length-prefixed", "websocket")


def shape(framing: str, profile: str | None = "anthropic", **kw: bool) -> LinkShape:
    return LinkShape(
        framing, kw.get("sse_chunked", True), profile=profile, ws_text=kw.get("ws_text", True)
    )


def body(wire: bytes) -> bytes:
    """The wire after its HTTP response head (a WebSocket accept key differs by run)."""
    head = wire.find(b"\r\n\r\n")
    return wire if head < 0 or not wire.startswith(b"HTTP/") else wire[head + 4 :]


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize(("profile", "event"), [(p, e) for p in CATALOGUE for e in CATALOGUE[p]])
def test_framed_bytes_are_what_the_framing_writes(framing: str, profile: str, event: str) -> None:
    # the framing's own server writing [a, event, b] puts exactly framed(event) between a and b
    a, b = Message(b'{"a":1}', "x" if framing == "sse" else ""), Message(b'{"b":2}')
    message = injected_event(profile, event, 7)
    if framing != "sse":
        message = Message(message.data)  # only SSE names the event
    plain = body(produce_wire(framing, [a, b])[1])
    with_event = body(produce_wire(framing, [a, message, b])[1])
    first = body(produce_wire(framing, [a], end=False)[1])
    added = framed(shape(framing, profile), message)
    at = len(first)  # where the producer's frame b starts
    assert with_event == plain[:at] + added + plain[at:]


@pytest.mark.parametrize("chunked", [True, False])
def test_sse_close_delimited_body_has_no_chunk_framing(chunked: bool) -> None:
    message = injected_event("anthropic", "ping", 0)
    data = framed(shape("sse", sse_chunked=chunked), message)
    body = b'event: ping\ndata: {"type":"ping"}\n\n'
    assert data == (b"%x\r\n%s\r\n" % (len(body), body) if chunked else body)


def test_websocket_binary_and_long_frames() -> None:
    assert framed(shape("websocket", ws_text=False), Message(b"ab"))[:2] == b"\x82\x02"
    long = framed(shape("websocket"), Message(b"x" * 300))
    assert long[:4] == b"\x81\x7e\x01\x2c" and len(long) == 304


def test_responses_events_carry_the_sequence_number_due() -> None:
    spec = TokenStreamSpec("openai-responses", ("Hi", " 🚀"), tools=1)
    stream = list(iter_messages(spec))
    for name, code in (
        ("error", ErrorCode.REMOTE_ERROR),
        ("response.failed", ErrorCode.REMOTE_ERROR),
        ("response.incomplete", ErrorCode.OUTPUT_TRUNCATED),
    ):
        tracker = TokenTracker("openai-responses")
        for message in stream[:5]:
            tracker.feed(message)
        with pytest.raises(CodecError) as info:
            tracker.feed(injected_event("openai-responses", name, 5))  # frame 6 carries 5
        assert info.value.code is code, name


def test_stage_writes_the_event_before_the_frame() -> None:
    _, wire = produce_wire("ndjson", list(iter_messages(TokenStreamSpec("anthropic", ("a", "b")))))
    lines = wire.split(b"\n")
    spans, at = [], 0
    for line in lines[:-1]:
        spans.append((at, at + len(line) + 1))
        at += len(line) + 1
    fault = InjectEvent(event="error", before_frame=4)
    run = run_fault(fault, chunks(wire, 10, spans[3][0] + 2), spans=spans, shape=shape("ndjson"))
    event = framed(shape("ndjson"), injected_event("anthropic", "error", 3))
    assert Heartbeat(event, "inserted") in run.items
    assert run.data == wire[: spans[3][0]] + event + wire[spans[3][0] :]
    assert [c for c in run.items if isinstance(c, Chunk)] != []
    assert run.entries == [
        ("inject_event", spans[3][0], f"error before frame 4 ({len(event)} bytes)")
    ]
    # what the consumer decodes: the producer's first three frames (text "a"), then the error
    events = decode("ndjson", [run.data])
    tracker = TokenTracker("anthropic")
    with pytest.raises(CodecError) as info:
        for message in events:
            assert isinstance(message, Message)
            tracker.feed(message)
    assert info.value.code is ErrorCode.REMOTE_ERROR
    assert tracker.text == "a"


def test_stage_on_a_link_without_the_event_never_fires() -> None:
    fault = InjectEvent(event="ping", before_frame=1)
    run = run_fault(fault, chunks(b"{}\n"), spans=[(0, 3)], shape=shape("ndjson", "openai"))
    assert run.data == b"{}\n"
    assert run.entries == [
        ("unreached", None, "inject_event: profile openai has no event 'ping' (it has: error)")
    ]


@pytest.mark.parametrize(
    ("link", "problem"),
    [
        (
            shape("grpc"),
            "needs framing sse, ndjson, length-prefixed, websocket (this link is grpc)",
        ),
        (shape("sse", None), "needs payload tokens: the event belongs to a token profile"),
        (shape("sse", "generic"), "profile generic has no event 'ping' (it has: none)"),
        (
            shape("sse", "openai-responses"),
            "profile openai-responses has no event 'ping' "
            "(it has: error, response.failed, response.incomplete)",
        ),
    ],
)
def test_event_problems(link: LinkShape, problem: str) -> None:
    assert event_problem("ping", link) == problem
    assert event_problem("ping", shape("sse")) is None


def test_registered_and_checked_before_the_stream() -> None:
    assert FAULTS["inject_event"] is InjectEvent
    traits = LinkTraits("sse", FramingOptions(), "tokens", "openai-responses")
    with pytest.raises(FieldError) as info:
        InjectEvent(event="ping", before_frame=2).check_placement(LiveStream(traits))
    assert info.value.path == ("event",)
    InjectEvent(event="response.failed", before_frame=2).check_placement(LiveStream(traits))
