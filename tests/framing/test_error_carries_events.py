"""A read that completes messages and then hits an error hands those messages on with the error
(``CodecError.events``): what is delivered before an error does not depend on the reads."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Event, Message
from reference_impl.framing import FramingOptions, make_client
from tests.wire import bytewise, examples, produce_wire, split_at

GOOD = [Message(b'{"n":1}'), Message(b'{"n":2}'), Message(b'{"n":3}')]
WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 section 1.3's sample


@pytest.fixture(autouse=True, scope="module")
def _pinned_nonce() -> Iterator[None]:
    """The recorded WebSocket wire answers one key; every fresh client must send that one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("wsproto.handshake.generate_nonce", lambda: WS_KEY)
        yield


def _grpc_compressed_third() -> bytes:
    _, wire = produce_wire("grpc", GOOD, end=False)
    prefix = b"\x00" + struct.pack(">I", len(GOOD[2].data)) + GOOD[2].data
    at = wire.rindex(prefix)
    return wire[:at] + b"\x01" + wire[at + 1 :]


def _sse_bad_third() -> bytes:
    _, wire = produce_wire("sse", GOOD[:2], end=False)
    event = b"data: \xff\n\n"
    return wire + b"%x\r\n" % len(event) + event + b"\r\n"


def _websocket_reserved_bit_third() -> bytes:
    _, wire = produce_wire("websocket", GOOD[:2], end=False)
    return wire + b"\xc1\x07" + GOOD[2].data  # RSV1 set, no extension negotiated


CASES: dict[str, tuple[Callable[[], bytes], ErrorCode, int]] = {
    "length-prefixed": (
        lambda: produce_wire("length-prefixed", GOOD[:2], end=False)[1] + b"\xff\xff\xff\xff",
        ErrorCode.FRAME_TOO_LARGE,
        2,
    ),
    "ndjson": (lambda: b'{"n":1}\n{"n":2}\n\xff\n{"n":4}\n', ErrorCode.INVALID_UTF8, 2),
    "sse": (_sse_bad_third, ErrorCode.INVALID_UTF8, 2),
    "websocket": (_websocket_reserved_bit_third, ErrorCode.PROTOCOL_ERROR, 2),
    "grpc": (_grpc_compressed_third, ErrorCode.PROTOCOL_ERROR, 2),
}


def _delivered(framing: str, pieces: list[bytes]) -> tuple[list[bytes], ErrorCode]:
    client = make_client(framing, FramingOptions(max_message_bytes=1024))
    client.initiate()
    events: list[Event] = []
    for piece in pieces:
        try:
            events += client.receive_data(piece)
        except CodecError as err:
            events += err.events
            return [e.data for e in events if isinstance(e, Message)], err.code
    raise AssertionError("no error")


@pytest.mark.parametrize("framing", sorted(CASES))
def test_whole_and_bytewise_deliver_the_same_messages_before_the_error(framing: str) -> None:
    make, code, count = CASES[framing]
    wire = make()
    expected = [m.data for m in GOOD[:count]]
    assert _delivered(framing, [wire]) == (expected, code)
    assert _delivered(framing, bytewise(wire)) == (expected, code)


@pytest.mark.parametrize("framing", sorted(CASES))
@examples(25)
@given(cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8))
# grpc: a read ending inside the third DATA frame, after its compressed flag, lost both messages
@example(cuts=[144])
@example(cuts=[154])  # the same, the last byte of that frame held back
def test_any_split_delivers_the_same_messages_before_the_error(
    framing: str, cuts: list[int]
) -> None:
    make, code, count = CASES[framing]
    wire = make()
    assert _delivered(framing, split_at(wire, cuts)) == ([m.data for m in GOOD[:count]], code)


@pytest.mark.parametrize("framing", sorted(CASES))
def test_every_single_read_boundary_delivers_the_same_messages_before_the_error(
    framing: str,
) -> None:
    make, code, count = CASES[framing]
    wire = make()
    expected = ([m.data for m in GOOD[:count]], code)
    cuts = range(len(wire) + 1)
    wrong = [k for k in cuts if _delivered(framing, split_at(wire, [k])) != expected]
    assert wrong == []
