"""The live stream (``harness/link/live.py``): where frames, matches and characters are, learnt
from the bytes as the proxy reads them, whatever the reads' sizes; what the producer sent."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import PositionError
from harness.faults.position import Position
from harness.link.case_wire import CaseWire
from harness.link.live import (
    EVERY_FRAME,
    MAX_EXACT_BYTES,
    MIN_MONITOR_BYTES,
    LinkTraits,
    LiveStream,
)
from harness.link.prepared import PreparedLink, prepare
from reference_impl.framing import FramingOptions
from reference_impl.framing.request import Request
from reference_impl.link.spec import LinkSpec
from reference_impl.payload import tokens
from tests.wire import examples

LINKS = {
    "length-prefixed": LinkSpec("length-prefixed", "messages"),
    "ndjson": LinkSpec("ndjson", "messages"),
    "sse": LinkSpec("sse", "tokens"),
    "sse-close": LinkSpec("sse", "messages", options=FramingOptions(sse_body="close")),
    "websocket": LinkSpec("websocket", "envelope"),
    "grpc": LinkSpec("grpc", "messages"),
    "ndjson-http": LinkSpec(
        "ndjson-http", "tokens", tokens=tokens.TokenStreamSpec("ollama", tokens.default_tokens(9))
    ),
    "ndjson-http-close": LinkSpec(
        "ndjson-http", "envelope", options=FramingOptions(sse_body="close")
    ),
}
#: an agent's request: a POST with a JSON body (its end is after the body, not the head)
CHAT = Request(
    method="POST", path="/api/chat", headers=(("Content-Type", "application/json"),), body=b"{}"
)


def traits(spec: LinkSpec) -> LinkTraits:
    return LinkTraits(spec.framing, spec.options, spec.payload, spec.tokens.profile)


def fed(known: PreparedLink, cuts: Sequence[int], *, wanted: int = EVERY_FRAME) -> LiveStream:
    """A live stream that saw ``known``'s clean wire in reads ending at ``cuts``, then EOF."""
    stream = LiveStream(traits(known.spec), wanted)
    start = 0
    for cut in [*sorted(set(cuts)), len(known.wire)]:
        if cut > start:
            stream.observe(known.wire[start:cut])
            start = cut
    stream.observe_end("eof")
    return stream


def assert_learnt(stream: LiveStream, known: PreparedLink) -> None:
    assert stream.spans(len(known.spans) + 1) == known.spans
    assert tuple(stream.digests) == known.digests()
    assert stream.content == known.content_messages
    assert stream.reached_end
    for index in range(1, len(known.spans) + 1):
        assert stream.frame_span(index) == known.spans[index - 1]


@pytest.mark.parametrize("name", sorted(LINKS))
def test_frames_whole_and_a_byte_at_a_time_are_the_prepared_links(name: str) -> None:
    known = prepare(LINKS[name])
    assert_learnt(fed(known, []), known)
    assert_learnt(fed(known, list(range(1, len(known.wire)))), known)


@pytest.mark.parametrize("name", sorted(LINKS))
@examples(15)
@given(data=st.data())
def test_frames_at_any_split_are_the_prepared_links(name: str, data: st.DataObject) -> None:
    known = prepare(LINKS[name])
    cuts = data.draw(st.lists(st.integers(1, len(known.wire) - 1), max_size=12))
    assert_learnt(fed(known, cuts), known)


def test_a_longer_response_head_moves_every_frame_with_it() -> None:
    # A consumer whose request says ``Connection: close`` gets a longer head from h11: the
    # frames are where the live stream has them, not where a dry run of our request put them.
    known = prepare(LINKS["sse"])
    extra = b"connection: close\r\n"
    head_end = known.wire.index(b"\r\n\r\n") + 2
    wire = known.wire[:head_end] + extra + known.wire[head_end:]
    stream = LiveStream(traits(known.spec), EVERY_FRAME)
    stream.observe(wire)
    shifted = tuple((a + len(extra), b + len(extra)) for a, b in known.spans)
    assert stream.spans(100) == shifted
    assert stream.offset(Position(frame=2, frame_offset=3)) == shifted[1][0] + 3


def test_frames_of_a_live_ndjson_stream_are_found_as_they_arrive() -> None:
    stream = LiveStream(LinkTraits("ndjson"))
    assert stream.offset(Position(frame=2)) is None  # asked first: decoded byte by byte
    stream.observe(b'{"n":1}\n{"n"')
    assert stream.offset(Position(frame=2)) == 8
    assert stream.frame_span(2) is None
    stream.observe(b":2}\n")
    assert stream.frame_span(2) == (8, 16)
    assert stream.offset(Position(frame=2, fraction=0.5)) == 12


def test_frames_decoded_in_bulk_are_refused_rather_than_guessed() -> None:
    stream = LiveStream(LinkTraits("ndjson"), wanted_frames=1)
    stream.observe(b'{"n":1}\n')  # a read while a frame is wanted: decoded byte by byte
    stream.observe(b'{"n":2}\n{"n":3}\n')  # none wanted any more: decoded whole
    assert stream.frame_span(1) == (0, 8)
    with pytest.raises(PositionError) as caught:
        stream.frame_span(3)
    assert caught.value.path == ("frame",)
    assert stream.spans(10) == ((0, 8),)
    assert len(stream.digests) == 3  # the messages are exact all the same


def test_exact_decoding_is_bounded_per_direction() -> None:
    stream = LiveStream(LinkTraits("ndjson"), EVERY_FRAME)
    line = b"x" * (MAX_EXACT_BYTES // 2 - 1) + b"\n"
    stream.observe(line)
    stream.observe(line)
    stream.observe(b"y\n")  # past the budget: decoded in bulk
    assert stream.frame_span(2) == (len(line), 2 * len(line))
    with pytest.raises(PositionError):
        stream.frame_span(3)


def test_a_match_is_found_across_reads() -> None:
    stream = LiveStream(LinkTraits())
    assert stream.offset(Position(match="needle")) is None
    stream.observe(b"hay ne")
    assert stream.not_before(Position(match="needle")) == 1
    stream.observe(b"edle hay")
    assert stream.offset(Position(match="needle")) == 4


def test_a_position_the_stream_ended_without_is_a_position_error() -> None:
    stream = LiveStream(LinkTraits("ndjson"))
    stream.frame_span(3)
    stream.observe(b'{"n":1}\n')
    assert stream.offset(Position(match="zzz")) is None
    stream.observe_end("eof")
    for position, key in (
        (Position(frame=3), "frame"),
        (Position(match="zzz"), "match"),
        (Position(utf8_char=1), "utf8_char"),
    ):
        with pytest.raises(PositionError) as caught:
            stream.offset(position)
        assert caught.value.path == (key,)


def test_the_kth_multibyte_character_counts_only_whole_characters() -> None:
    stream = LiveStream(LinkTraits())
    assert stream.offset(Position(utf8_char=2, char_byte=1)) is None
    stream.observe(b"\xc5a \xe2\x82")  # a lone lead byte, then a character cut by the read
    assert stream.offset(Position(utf8_char=1, char_byte=1)) is None
    stream.observe(b"\xac")
    assert stream.offset(Position(utf8_char=1, char_byte=1)) == 4
    with pytest.raises(PositionError):
        stream.offset(Position(utf8_char=1, char_byte=3))  # the euro sign has 3 bytes


def test_frames_need_a_framing_and_sse_frames_start_after_the_head() -> None:
    with pytest.raises(PositionError):
        LiveStream(LinkTraits()).frame_span(1)
    stream = LiveStream(LinkTraits("sse"))
    stream.frame_span(1)
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    stream.observe(head + b"b\r\ndata: one\n\n\r\n")
    assert stream.frame_span(1) == (len(head), len(head) + 16)


def test_a_cut_stream_did_not_reach_its_end_and_what_passed_is_what_was_delivered() -> None:
    known = prepare(LINKS["sse"])
    stream = LiveStream(traits(known.spec))
    delivered = stream.watch_delivery()
    cut = known.spans[2][1]
    stream.observe(known.wire)
    stream.observe_written(known.wire[:cut])
    stream.observe_end("eof")
    stream.observe_closed("rst")
    assert stream.reached_end and not delivered.reached_end
    assert tuple(delivered.digests) == known.digests()[:3]
    assert delivered.digests[0] == hashlib.sha256(known.messages[0]).hexdigest()


def test_a_clean_close_ends_a_framing_without_an_end_of_its_own() -> None:
    stream = LiveStream(LinkTraits("length-prefixed", payload="messages"))
    stream.observe(b"\x00\x00\x00\x02hi")
    assert not stream.reached_end
    stream.observe_end("eof")
    assert stream.reached_end
    cut = LiveStream(LinkTraits("length-prefixed", payload="messages"))
    cut.observe(b"\x00\x00\x00\x02hi")
    cut.observe_end("cut")
    assert not cut.reached_end


@pytest.mark.parametrize(
    ("framing", "request_"),
    [
        ("sse", Request()),
        ("sse", CHAT),
        ("ndjson-http", CHAT),
        ("websocket", Request()),
        ("grpc", Request()),
    ],
)
def test_the_requests_end_is_found_at_any_split(framing: str, request_: Request) -> None:
    known = prepare(LinkSpec(framing, "messages", options=FramingOptions(request=request_)))
    assert known.request.endswith(request_.body)
    request = known.request + b"after"  # what follows the request is not the request
    for step in (len(request), 1, 7):
        stream = LiveStream(LinkTraits(framing, request=True))
        assert stream.offset(Position(request_end=True)) is None
        for start in range(0, len(request), step):
            stream.observe(request[start : start + step])
        assert stream.offset(Position(request_end=True)) == len(known.request)


def test_the_requests_end_is_byte_0_without_a_request_and_asked_only_upstream() -> None:
    assert LiveStream(LinkTraits("ndjson", request=True)).offset(Position(request_end=True)) == 0
    with pytest.raises(PositionError) as caught:
        LiveStream(LinkTraits("sse")).offset(Position(request_end=True))
    assert caught.value.path == ("request_end",)
    unfinished = LiveStream(LinkTraits("sse", request=True))
    unfinished.observe(b"GET / HTTP/1.1\r\n")
    unfinished.observe_end("eof")
    with pytest.raises(PositionError):
        unfinished.offset(Position(request_end=True))


def test_a_token_streams_result_is_its_tokens_not_its_scaffolding() -> None:
    # An SDK keeps message_start, the ping carrying the length hint and the block events to
    # itself: a complete result must include the three deltas, not those.
    spec = LinkSpec(
        "sse",
        "tokens",
        tokens=tokens.TokenStreamSpec("anthropic", tokens.default_tokens(3, 0), True),
    )
    known = prepare(spec)
    stream = fed(known, [])
    assert stream.carrying == known.digests()[3:6]
    assert stream.content == 6


CRLF_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
CRLF_EVENTS = (b"data: one\r\n\r\n", b"data: caf\xc3\xa9\r\n\r\n", b"data: [DONE]\r\n\r\n")


def _crlf_wire(chunked: bool) -> tuple[bytes, tuple[tuple[int, int], ...]]:
    """An SSE response whose lines end with CRLF (sse-starlette's default), and the true
    ``[start, end)`` of each event on the wire (chunked: with its chunk's size line and CRLF)."""
    head = CRLF_HEAD + (b"transfer-encoding: chunked\r\n\r\n" if chunked else b"\r\n")
    frames = [b"%x\r\n%s\r\n" % (len(e), e) if chunked else e for e in CRLF_EVENTS]
    spans, at = [], len(head)
    for frame in frames:
        spans.append((at, at + len(frame)))
        at += len(frame)
    return head + b"".join(frames) + (b"0\r\n\r\n" if chunked else b""), tuple(spans)


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close"])
@pytest.mark.parametrize("step", [1, 2, 3, 5, 1000])
def test_an_event_ended_by_crlf_owns_its_last_lf(chunked: bool, step: int) -> None:
    # The codec dispatches an event at the CR of its blank line (a lone CR ends a line too),
    # one byte before the LF: the frame still ends after that LF (and its chunk's CRLF), so
    # frame 2 starts at its own chunk size line, not 3 bytes inside frame 1. Found on
    # sse-starlette (docs/chaos-testing.md), whose events end with CRLF CRLF.
    wire, spans = _crlf_wire(chunked)
    options = FramingOptions(sse_body="chunked" if chunked else "close")
    stream = LiveStream(LinkTraits("sse", options), EVERY_FRAME)
    for start in range(0, len(wire), step):
        stream.observe(wire[start : start + step])
    stream.observe_end("eof")
    assert stream.spans(len(spans)) == spans
    assert len(stream.digests) == len(CRLF_EVENTS)


def test_no_frame_comes_after_the_framings_own_end_though_the_connection_stays_open() -> None:
    # uvicorn keeps the connection open after a chunked SSE body: frame 30 of a stream that
    # ended after 2 is refused at the last chunk, not when the consumer gives up and closes
    wire, _ = _crlf_wire(chunked=True)
    stream = LiveStream(LinkTraits("sse"), EVERY_FRAME)
    stream.observe(wire[:-5])
    assert stream.frame_span(30) is None
    stream.observe(wire[-5:])  # b"0\r\n\r\n"
    with pytest.raises(PositionError, match="the stream had 3 frames, not 30"):
        stream.frame_span(30)


@pytest.mark.parametrize("framing", ["sse", "ndjson", "length-prefixed", "websocket"])
def test_a_message_over_the_limit_stops_decoding_and_says_so(framing: str) -> None:
    """A peer's endless message costs at most the decoders' limit: past it the stream is no
    longer decoded, memory stays flat, and ``over_limit`` names the size and the limit."""
    limit = MIN_MONITOR_BYTES
    heads = {
        "sse": b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: ",
        "ndjson": b"",
        "length-prefixed": (limit + 10).to_bytes(4, "big"),
        "websocket": b"HTTP/1.1 101 Switching Protocols\r\n\r\n\x82\x7f"
        + (limit + 10).to_bytes(8, "big"),
    }
    stream = LiveStream(LinkTraits(framing, payload="messages"))
    stream.observe(heads[framing])
    piece = b"x" * (1 << 20)
    for _ in range(20):  # 20 MiB of one message, more than the 16 MiB limit
        stream.observe(piece)
    assert stream.error is not None and stream.over_limit.startswith(
        f"the service sent a message of more than {limit} bytes after 0 messages; the link's "
        "limit is 16 MiB ("
    )
    assert stream.codec is not None and stream.codec.partial() == b""  # nothing of it held


def test_what_the_stream_held_is_said_for_a_case_without_a_verdict() -> None:
    """A no_verdict case says what the producer's stream held when the deadline came: a
    head a byte at a time, or a flood that had not ended."""
    wire = CaseWire(LinkTraits("sse", payload="messages"), ())
    assert wire.held() == ""  # the consumer never connected
    stream = wire("downstream", 1)
    assert wire.held() == "the producer sent nothing on connection 1"
    stream.observe(b"HTTP/1.1 2")
    assert wire.held() == "the producer sent 10 bytes on connection 1, its response head unended"
    stream.observe(b"00 OK\r\ncontent-type: text/event-stream\r\n\r\n" + b"data: t\n\n" * 3)
    assert wire.held() == "the producer sent 79 bytes on connection 1: 3 messages, no end"
