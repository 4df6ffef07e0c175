"""How the reads fall never changes what a decoder delivers (``base.py``'s first rule).

For all six framings, a wire is decoded whole, one byte at a time, and cut at random offsets
(which splits some of the producer's writes and merges others). Each way must give the same
``Outcome``: every event delivered, those returned first and then the error's ``events``; the
error's code and ``at_boundary``; and, when no error came before it, what ``partial()`` and
``expected_size()`` say before EOF. Clean streams must also decode to exactly what was sent.
Error-carrying streams come from builders that write each framing's frames by hand (reaching
states the producers never make) and from random byte mutations of those wires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Event, Message, StreamEnd
from reference_impl.framing import FRAMING_NAMES, FramingOptions, grpc, make_client
from tests.wire import bytewise, examples, produce_wire, split_at

# RFC 6455 section 1.3's sample key, pinned below, and the 101 answer it implies.
WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="
WS_HEAD = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
)
SSE_CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
SSE_CLOSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
NDJSON_CHUNKED_HEAD = SSE_CHUNKED_HEAD.replace(b"text/event-stream", b"application/x-ndjson")
NDJSON_CLOSE_HEAD = SSE_CLOSE_HEAD.replace(b"text/event-stream", b"application/x-ndjson")
GRPC_RESPONSE = [(":status", "200"), ("content-type", "application/grpc")]
#: framings whose producer ends explicitly: EOF between messages without that end is an error
EXPLICIT_END = {
    "sse": StreamEnd(ok=True),
    "ndjson-http": StreamEnd(ok=True),
    "websocket": StreamEnd(True, "close 1000"),
    "grpc": StreamEnd(True, "grpc-status 0"),
}


@pytest.fixture(autouse=True, scope="module")
def _pinned_nonce() -> Iterator[None]:
    """A fresh WebSocket client draws a random Sec-WebSocket-Key; the recorded 101 answers
    here fit only the sample key."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("wsproto.handshake.generate_nonce", lambda: WS_KEY)
        yield


@dataclass(frozen=True, slots=True)
class Case:
    """A wire, the client's options, where the third reading cuts it, and whether EOF follows."""

    framing: str
    wire: bytes
    options: FramingOptions = field(default_factory=FramingOptions)
    cuts: tuple[int, ...] = ()
    eof: bool = True


@dataclass(frozen=True, slots=True)
class Outcome:
    """Everything a decoder said about a wire (see the module docstring)."""

    events: tuple[Event, ...]
    code: ErrorCode | None = None
    at_boundary: bool | None = None
    partial: bytes = b""  # before EOF, when no error came first
    expected_size: int | None = None


def read(case: Case, pieces: Sequence[bytes]) -> Outcome:
    """Decode ``pieces`` with a fresh client; a dead client must repeat its error."""
    client = make_client(case.framing, case.options)
    client.initiate()
    events: list[Event] = []
    try:
        for piece in pieces:
            events += client.receive_data(piece)
        before_eof = (client.partial(), client.expected_size())
        if case.eof:
            events += client.receive_eof()
    except CodecError as err:
        with pytest.raises(CodecError) as again:
            client.receive_data(b"\x00")
        assert again.value.code is err.code
        return Outcome((*events, *err.events), err.code, err.at_boundary)
    return Outcome(tuple(events), None, None, *before_eof)


def check_any_reads(case: Case) -> Outcome:
    """Whole, bytewise and cut at ``case.cuts`` give one outcome; return it."""
    whole = read(case, [case.wire])
    assert read(case, bytewise(case.wire)) == whole
    assert read(case, split_at(case.wire, case.cuts)) == whole
    return whole


# --- clean streams ------------------------------------------------------------------------------


def carriable(framing: str, data: bytes) -> bytes:
    """``data`` made into a message the framing's producer can carry back intact."""
    if framing in ("ndjson", "ndjson-http", "sse", "websocket"):
        data = data.decode("utf-8", "ignore").encode()
    if framing in ("ndjson", "ndjson-http"):
        data = data.replace(b"\n", b"").rstrip(b"\r") or b"{}"
    if framing == "sse":
        data = data.replace(b"\r", b"")
    return data


def options_for(framing: str, data: st.DataObject) -> FramingOptions:
    """The producer-side options worth varying for ``framing``."""
    if framing in ("sse", "ndjson-http"):
        return FramingOptions(sse_body=data.draw(st.sampled_from(["chunked", "close"])))
    if framing == "websocket":
        fragment = data.draw(st.integers(0, 4))
        return FramingOptions(ws_text=data.draw(st.booleans()), ws_fragment_bytes=fragment)
    return FramingOptions()


def expected_clean(
    framing: str, options: FramingOptions, messages: list[Message], end: bool
) -> Outcome:
    """What a clean stream decodes to, EOF included."""
    explicit = EXPLICIT_END.get(framing)
    if framing in ("sse", "ndjson-http") and options.sse_body == "close":
        explicit = None  # close-delimited: EOF is the end
    if explicit is None:
        return Outcome(tuple(messages))
    if end:
        return Outcome((*messages, explicit))
    return Outcome(tuple(messages), ErrorCode.STREAM_END_MISSING, True)


@pytest.mark.parametrize("framing", FRAMING_NAMES)
@examples(60)
@given(
    payloads=st.lists(st.binary(max_size=40), max_size=6),
    end=st.booleans(),
    cuts=st.lists(st.integers(0, 700), max_size=10),
    data=st.data(),
)
def test_clean_streams_decode_exactly_under_any_reads(
    framing: str, payloads: list[bytes], end: bool, cuts: list[int], data: st.DataObject
) -> None:
    options = options_for(framing, data)
    messages = [Message(carriable(framing, p)) for p in payloads]
    _, wire = produce_wire(framing, messages, end=end, options=options)
    outcome = check_any_reads(Case(framing, wire, options, tuple(cuts)))
    assert outcome == expected_clean(framing, options, messages, end)


# --- error-carrying streams: each framing's frames written by hand ------------------------------

SMALL_LIMITS = st.sampled_from([3, 5, 8, 16, 1024, 1024])
#: a hand-built wire: how many bytes of it are the handshake, and all of it
Wire = tuple[int, bytes]


@st.composite
def length_prefixed_wires(draw: st.DrawFn) -> Wire:
    """Messages whose header may lie about their length."""
    parts: list[bytes] = []
    for body in draw(st.lists(st.binary(max_size=12), max_size=5)):
        declared = max(0, len(body) + draw(st.sampled_from([0, 0, 0, -1, 1, 1 << 20])))
        parts += [declared.to_bytes(4, "big"), body]
    return 0, b"".join(parts)


NDJSON_LINES = [b"{}", b'{"a":1}', b"", b"\r", b"x\r", b"\xc3\xa9", b"\xc3", b"\xff", b"12345678"]


@st.composite
def ndjson_wires(draw: st.DrawFn) -> Wire:
    """Lines with CRs, blank lines, bad and cut UTF-8, lines near the size limits."""
    lines = draw(st.lists(st.sampled_from(NDJSON_LINES), max_size=8))
    tail = draw(st.sampled_from([b"", b"{", b"\r", b"\xc3"]))
    return 0, b"".join(line + b"\n" for line in lines) + tail


SSE_LINES = [
    b"data: x",
    b"data:yz",
    b"data",
    b"data: \xc3\xa9",
    b"data: \xff",
    b"id: 7",
    b"id",
    b"event: t",
    b"retry: 10",
    b": ping",
    b"",
    b"",
    b"12345678",
    b"\xef\xbb\xbfdata: bom",
]


@st.composite
def sse_bodies(draw: st.DrawFn) -> bytes:
    """Event-stream lines with every line ending, a BOM maybe, an unterminated tail maybe."""
    body = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xef\xbb"]))
    for line in draw(st.lists(st.sampled_from(SSE_LINES), max_size=10)):
        body += line + draw(st.sampled_from([b"\n", b"\r", b"\r\n"]))
    return body + draw(st.sampled_from([b"", b"", b"data: cut", b"\r", b": cut", b"da"]))


def http_wires(
    bodies: st.SearchStrategy[bytes], chunked_head: bytes, close_head: bytes
) -> st.SearchStrategy[Wire]:
    """A response head, then the body in HTTP chunks cut anywhere (or close-delimited)."""

    @st.composite
    def wires(draw: st.DrawFn) -> Wire:
        body = draw(bodies)
        if draw(st.booleans()):
            return len(close_head), close_head + body
        cuts = draw(st.lists(st.integers(0, len(body)), max_size=4))
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in split_at(body, cuts) if c)
        end = draw(st.sampled_from([b"0\r\n\r\n", b"0\r\n\r\n", b"", b"0\r\n"]))
        return len(chunked_head), chunked_head + chunks + end

    return wires()


def sse_wires() -> st.SearchStrategy[Wire]:
    return http_wires(sse_bodies(), SSE_CHUNKED_HEAD, SSE_CLOSE_HEAD)


def ndjson_http_wires() -> st.SearchStrategy[Wire]:
    """NDJSON's hand-built lines (``ndjson_wires``) as the body of an HTTP response."""
    body = ndjson_wires().map(lambda wire: wire[1])
    return http_wires(body, NDJSON_CHUNKED_HEAD, NDJSON_CLOSE_HEAD)


def ws_frame(first: int, payload: bytes, masked: bool = False) -> bytes:
    """A server frame with the shortest length encoding; ``first`` is FIN|RSV|opcode."""
    size = len(payload)
    mask = 0x80 if masked else 0
    if size < 126:
        header = bytes((first, mask | size))
    elif size < 1 << 16:
        header = bytes((first, mask | 126)) + size.to_bytes(2, "big")
    else:
        header = bytes((first, mask | 127)) + size.to_bytes(8, "big")
    return header + (b"\x00\x00\x00\x00" if masked else b"") + payload


WS_PAYLOADS = [b"", b"ab", "é🚀".encode(), b"\xc3", b"\xa9", b"123456789", b"\xff", b"\xed\xa0"]
WS_CONTROLS = [ws_frame(0x89, b"p"), ws_frame(0x8A, b""), ws_frame(0x89, b"\xff" * 3)]
WS_CLOSES = [b"", b"\x03\xe8", b"\x03\xe8ok", b"\x03\xf3", b"\x03", b"\x00\x00", b"\x03\xe8\xff"]
WS_VIOLATIONS = [
    ws_frame(0xC1, b"r"),  # RSV1 without an extension
    ws_frame(0x81, b"m", masked=True),  # a masked server frame
    ws_frame(0x83, b""),  # a reserved opcode
    ws_frame(0x80, b"c"),  # a continuation with nothing to continue
    ws_frame(0x09, b""),  # a fragmented ping
    b"\x81\x7e\x00\x01x",  # a 2-byte length where 1 byte does
]


@st.composite
def ws_message(draw: st.DrawFn) -> bytes:
    """One text or binary message in 1-3 fragments, maybe with control frames between them
    and, rarely, a frame that breaks a rule."""
    opcode = draw(st.sampled_from([0x1, 0x2]))
    fragments = draw(st.lists(st.sampled_from(WS_PAYLOADS), min_size=1, max_size=3))
    frames = b""
    for index, payload in enumerate(fragments):
        fin = 0x80 if index == len(fragments) - 1 else 0
        frames += ws_frame(fin | (opcode if index == 0 else 0x0), payload)
        if draw(st.integers(0, 4)) == 0:
            frames += draw(st.sampled_from(WS_CONTROLS))
        if draw(st.integers(0, 19)) == 0:
            frames += draw(st.sampled_from(WS_VIOLATIONS))
    return frames


@st.composite
def websocket_wires(draw: st.DrawFn) -> Wire:
    """The 101 answer, messages (bad UTF-8 maybe), a close frame (legal or not) or none."""
    wire = WS_HEAD + b"".join(draw(st.lists(ws_message(), max_size=4)))
    if draw(st.booleans()):
        wire += ws_frame(0x88, draw(st.sampled_from(WS_CLOSES)))
    return len(WS_HEAD), wire


def grpc_server() -> H2Connection:
    """A bare h2 server that has read the client's call."""
    h2 = H2Connection(H2Configuration(client_side=False))
    h2.initiate_connection()
    h2.receive_data(grpc.client(FramingOptions()).initiate())
    return h2


def grpc_prefix(size: int, flag: int = 0) -> bytes:
    return bytes([flag]) + size.to_bytes(4, "big")


#: GOAWAY, NO_ERROR, last stream 1: the stream may still finish (h2 would close its own side)
GRPC_GOAWAY = b"\x00\x00\x08\x07\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00"


def grpc_other_frame(h2: H2Connection, kind: int) -> bytes:
    """A frame that carries no message: PING, SETTINGS, WINDOW_UPDATE, or GOAWAY."""
    if kind == 0:
        h2.ping(b"12345678")
    elif kind == 1:
        h2.update_settings({4: 70000})  # SETTINGS_INITIAL_WINDOW_SIZE
    elif kind == 2:
        h2.increment_flow_control_window(10)
    else:
        return h2.data_to_send() + GRPC_GOAWAY
    return h2.data_to_send()


@st.composite
def grpc_wires(draw: st.DrawFn) -> Wire:
    """Length-prefixed messages (bad flags and lengths maybe) in DATA frames cut anywhere,
    padded maybe, other frames between them, with or without trailers; rarely without the
    response."""
    h2 = grpc_server()
    preface = h2.data_to_send()
    h2.send_headers(1, GRPC_RESPONSE)
    wire = preface + h2.data_to_send()
    if draw(st.integers(0, 9)) == 0:
        wire = preface
    stream = b""
    for body in draw(st.lists(st.binary(max_size=10), max_size=5)):
        flag = draw(st.sampled_from([0, 0, 0, 0, 0, 1, 2]))
        declared = max(0, len(body) + draw(st.sampled_from([0, 0, 0, 0, -1, 1, 1 << 20])))
        stream += grpc_prefix(declared, flag) + body
    for piece in split_at(stream, draw(st.lists(st.integers(0, len(stream)), max_size=4))):
        h2.send_data(1, piece, pad_length=draw(st.sampled_from([None, None, 0, 3])))
        if draw(st.integers(0, 5)) == 0:
            wire += grpc_other_frame(h2, draw(st.integers(0, 3)))
    ending = draw(st.sampled_from(["trailers", "trailers", "none", "end-stream", "reset"]))
    if ending == "trailers":
        h2.send_headers(1, [("grpc-status", draw(st.sampled_from(["0", "13", "x"])))], True)
    elif ending == "end-stream":
        h2.end_stream(1)
    elif ending == "reset":
        h2.reset_stream(1)
    return len(preface), wire + h2.data_to_send()


HAND_BUILT: dict[str, Callable[[], st.SearchStrategy[Wire]]] = {
    "length-prefixed": length_prefixed_wires,
    "ndjson": ndjson_wires,
    "sse": sse_wires,
    "ndjson-http": ndjson_http_wires,
    "websocket": websocket_wires,
    "grpc": grpc_wires,
}


@st.composite
def mutated(draw: st.DrawFn, wires: st.SearchStrategy[Wire]) -> bytes:
    """A wire with up to three random changes: a byte replaced, bytes inserted, deleted or
    appended, or the rest of it cut off; mostly after the handshake, where the messages are."""
    head, original = draw(wires)
    wire = bytearray(original)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "append", "cut"]))
        first = 0 if draw(st.integers(0, 9)) == 0 else min(head, len(wire))
        at = draw(st.integers(first, len(wire)))
        if kind == "replace" and at < len(wire):
            wire[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            wire[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del wire[at : at + draw(st.integers(1, 8))]
        elif kind == "append":  # after the stream's explicit end, if it has one
            wire += draw(st.sampled_from([b"x", b"\n", b"data: late\n\n", b"\x00" * 9]))
        elif kind == "cut":
            del wire[at:]
    return bytes(wire)


@st.composite
def error_cases(draw: st.DrawFn, framing: str) -> Case:
    wire = draw(mutated(HAND_BUILT[framing]()))
    options = FramingOptions(max_message_bytes=draw(SMALL_LIMITS))
    cuts = tuple(draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    return Case(framing, wire, options, cuts, draw(st.booleans()))


def _grpc_frames(*payloads: bytes, respond: bool = True) -> bytes:
    """The server's wire: its preface, the response (if ``respond``), one DATA frame each."""
    h2 = grpc_server()
    if respond:
        h2.send_headers(1, GRPC_RESPONSE)
    for payload in payloads:
        h2.send_data(1, payload)
    return h2.data_to_send()


def _grpc_data_before_the_response() -> bytes:
    """The response HEADERS frame's type byte made DATA: h2 refuses DATA before a response."""
    wire = bytearray(_grpc_frames(grpc_prefix(1) + b"a"))
    wire[len(_grpc_frames(respond=False)) + 3] = 0x0
    return bytes(wire)


GRPC_AB = _grpc_frames(grpc_prefix(1) + b"a", grpc_prefix(1) + b"b")
GRPC_AB_COMPRESSED = _grpc_frames(
    grpc_prefix(1) + b"a", grpc_prefix(1) + b"b", grpc_prefix(1, 1) + b"c"
)
SSE_AB = SSE_CHUNKED_HEAD + b"9\r\ndata: a\n\n\r\n9\r\ndata: b\n\n\r\n"
A, B = Message(b"a"), Message(b"b")

# Each regression was found by the property below; each @example line says what it caught.
# The expected outcomes (as delivered one byte at a time) are pinned in the test after it.
GRPC_CUT_AFTER_BAD_FLAG = Case("grpc", GRPC_AB_COMPRESSED, cuts=(len(GRPC_AB_COMPRESSED) - 1,))
GRPC_BAD_SETTINGS_AFTER = Case("grpc", GRPC_AB + b"\x00\x00\x01\x04\x00\x00\x00\x00\x00\x00")
GRPC_HUGE_FRAME_AFTER = Case("grpc", GRPC_AB + b"\xff\xff\xff\x00\x00\x00\x00\x00\x01")
GRPC_MESSAGE_AHEAD = Case("grpc", _grpc_frames(grpc_prefix(0) + grpc_prefix(0, 1) + b"x"))
GRPC_DATA_FIRST = Case("grpc", _grpc_data_before_the_response())
GRPC_DATA_AFTER_GOAWAY = Case(
    "grpc",
    _grpc_frames() + GRPC_GOAWAY + b"\x00\x00\x06\x00\x00\x00\x00\x00\x01\x02\x00\x00\x00\x01c",
)
GRPC_DATA_IN_HEADER_BLOCK = Case(
    "grpc",
    GRPC_AB
    + b"\x00\x00\x01\x01\x00\x00\x00\x00\x01\x88"  # HEADERS without END_HEADERS
    + b"\x00\x00\x06\x00\x00\x00\x00\x00\x01\x02\x00\x00\x00\x01c",  # DATA, bad flag
)
SSE_BAD_CHUNK_AFTER = Case("sse", SSE_AB + b"9\r\ndata: c\n\nXX")
SSE_END_INSIDE_EVENT = Case("sse", SSE_AB + b"7\r\ndata: c\r\n0\r\n\r\n")
SSE_COMMENT_CRLF = Case("sse", SSE_CHUNKED_HEAD + b"d\r\ndata: x\n: 0\r\n\r\n", eof=False)
SSE_JUNK_AFTER_END = Case("sse", SSE_AB + b"0\r\n\r\nXYZ")
WS_RSV1_AFTER = Case("websocket", WS_HEAD + ws_frame(0x81, b"a") + ws_frame(0xC1, b"b"))
WS_NON_ASCII_HEAD = Case("websocket", WS_HEAD.replace(b"Connection: Upgrade", b"Connection: \x80"))
REGRESSIONS = {
    "grpc-cut-after-bad-flag": (
        GRPC_CUT_AFTER_BAD_FLAG,
        Outcome((A, B), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "grpc-bad-settings-after": (
        GRPC_BAD_SETTINGS_AFTER,
        Outcome((A, B), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "grpc-huge-frame-after": (
        GRPC_HUGE_FRAME_AFTER,
        Outcome((A, B), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "grpc-message-ahead": (
        GRPC_MESSAGE_AHEAD,
        Outcome((Message(b""),), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "grpc-data-first": (GRPC_DATA_FIRST, Outcome((), ErrorCode.PROTOCOL_ERROR, False)),
    "grpc-data-after-goaway": (
        GRPC_DATA_AFTER_GOAWAY,
        Outcome((), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "grpc-data-in-header-block": (
        GRPC_DATA_IN_HEADER_BLOCK,
        Outcome((A, B), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "sse-bad-chunk-after": (
        SSE_BAD_CHUNK_AFTER,
        Outcome((A, B, Message(b"c")), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "sse-end-inside-event": (
        SSE_END_INSIDE_EVENT,
        Outcome((A, B), ErrorCode.FRAME_TRUNCATED, False),
    ),
    "sse-comment-crlf": (SSE_COMMENT_CRLF, Outcome((), partial=b"data: x\n")),
    "sse-junk-after-end": (
        SSE_JUNK_AFTER_END,
        Outcome((A, B, StreamEnd(ok=True)), ErrorCode.PROTOCOL_ERROR, False),
    ),
    "ws-rsv1-after": (WS_RSV1_AFTER, Outcome((A,), ErrorCode.PROTOCOL_ERROR, False)),
    "ws-non-ascii-head": (WS_NON_ASCII_HEAD, Outcome((), ErrorCode.PROTOCOL_ERROR, False)),
}


@st.composite
def any_error_case(draw: st.DrawFn) -> Case:
    return draw(error_cases(draw(st.sampled_from(FRAMING_NAMES))))


@examples(500)  # 100 a framing
@given(case=any_error_case())
# gRPC: a bad prefix seen ahead in the incomplete DATA frame dropped the read's messages.
@example(case=GRPC_CUT_AFTER_BAD_FLAG)
# gRPC: an h2 error in a later frame of the read dropped the messages of earlier frames.
@example(case=GRPC_BAD_SETTINGS_AFTER)
# gRPC: a frame header above the size limit dropped the messages of earlier frames.
@example(case=GRPC_HUGE_FRAME_AFTER)
# gRPC: a whole message ahead of a bad prefix in the same incomplete DATA frame was lost.
@example(case=GRPC_MESSAGE_AHEAD)
# gRPC: DATA before the response was judged by its payload (MALFORMED_FRAME) only bytewise.
@example(case=GRPC_DATA_FIRST)
# gRPC: DATA after a GOAWAY (which h2 makes refuse every frame) was judged by its payload.
@example(case=GRPC_DATA_AFTER_GOAWAY)
# gRPC: DATA inside a header block (h2 wants CONTINUATION) was judged by its payload.
@example(case=GRPC_DATA_IN_HEADER_BLOCK)
# SSE: an h11 error after whole events in the same read dropped those events.
@example(case=SSE_BAD_CHUNK_AFTER)
# SSE: the last chunk arriving inside an event dropped the read's earlier events.
@example(case=SSE_END_INSIDE_EVENT)
# SSE: a CRLF split after a comment line inside an event added the LF to partial().
@example(case=SSE_COMMENT_CRLF)
# SSE: bytes after the last chunk, in the same read, dropped the StreamEnd before the error.
@example(case=SSE_JUNK_AFTER_END)
# WebSocket: a frame wsproto refuses (RSV1) dropped the read's earlier messages.
@example(case=WS_RSV1_AFTER)
# WebSocket: a non-ASCII Connection header escaped as UnicodeDecodeError, not CodecError.
@example(case=WS_NON_ASCII_HEAD)
def test_error_carrying_streams_decode_alike_under_any_reads(case: Case) -> None:
    check_any_reads(case)


@pytest.mark.parametrize(("case", "expected"), list(REGRESSIONS.values()), ids=list(REGRESSIONS))
def test_regressions_deliver_what_came_before_the_error(case: Case, expected: Outcome) -> None:
    assert check_any_reads(case) == expected


@pytest.mark.parametrize(("case", "expected"), list(REGRESSIONS.values()), ids=list(REGRESSIONS))
def test_every_single_cut_of_a_regression_decodes_alike(case: Case, expected: Outcome) -> None:
    wrong = [
        k for k in range(len(case.wire) + 1) if read(case, split_at(case.wire, [k])) != expected
    ]
    assert wrong == []
