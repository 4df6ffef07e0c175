"""The consumer core's timers: idle (any byte), incomplete message (bytes of a message) and,
when set, content idle (a message the payload counts as content).

Pure: times are passed in, no clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reference_impl.events import Message
from reference_impl.framing import FramingOptions
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.session import ConsumerSession
from reference_impl.payload.tokens import TokenStreamSpec, iter_messages
from tests.wire import bytewise, produce_wire

KEY = b"dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455's sample key


@pytest.fixture(autouse=True)
def _pinned_nonce() -> Iterator[None]:
    """A fresh client must send the key the recorded 101 answer was made for."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("wsproto.handshake.generate_nonce", lambda: KEY)
        yield


def test_a_message_that_starts_late_gets_the_whole_timeout() -> None:
    # The 101 answer trickles in for 10 s (no message in flight: the idle timer runs); then a
    # WebSocket frame header announces a message. Its timeout counts from that header, not
    # from the connection's start: a slow handshake is not a stale message.
    _, wire = produce_wire("websocket", [Message(b"hello")], end=False)
    head_end = wire.index(b"\r\n\r\n") + 4
    config = ConsumerConfig("websocket", incomplete_message_timeout_s=1.0, idle_timeout_s=30.0)
    session = ConsumerSession(config)
    session.connect(0.0)
    for i, byte in enumerate(bytewise(wire[:head_end])):
        session.receive(byte, 10.0 * (i + 1) / head_end)
    assert session.deadline() == 40.0  # idle: 10 s + 30 s
    session.receive(wire[head_end : head_end + 2], 10.0)  # the 2-byte frame header only
    assert session.has_partial
    assert session.deadline() == 11.0


def test_heartbeats_do_not_keep_a_partial_message_alive() -> None:
    # seed 000 gate 3 counts from the last byte *of the partial message*; a comment line inside
    # the event (a heartbeat) is no byte of it (catalogue case 19).
    options = FramingOptions(sse_body="close")
    _, wire = produce_wire("sse", [Message(b"a\nb")], end=False, options=options)
    cut = wire.index(b"data: a\n") + len(b"data: a\n")  # inside the event, at a line end
    config = ConsumerConfig(
        "sse", framing_options=options, incomplete_message_timeout_s=1.0, idle_timeout_s=30.0
    )
    session = ConsumerSession(config)
    session.connect(0.0)
    session.receive(wire[:cut], 2.0)
    assert session.has_partial
    assert session.deadline() == 3.0
    session.receive(b": ping\n", 2.5)
    assert session.deadline() == 3.0
    session.receive(b"data: b\n", 2.7)  # a real byte of the event moves it
    assert session.deadline() == 3.7


@pytest.mark.parametrize("listed", [True, False])
def test_a_consumer_told_not_to_list_counts_what_it_hands_on(listed: bool) -> None:
    """A long stream consumed on its own keeps a count, not a list (O(1) memory, issue 10)."""
    messages = [Message(b"one"), Message(b"two"), Message(b"three")]
    _, wire = produce_wire("length-prefixed", messages)
    session = ConsumerSession(ConsumerConfig("length-prefixed", list_accepted=listed))
    session.connect(0.0)
    session.receive(wire, 0.0)
    session.end_of_stream("eof", 0.0)
    report = session.report()
    assert session.accepted_count == 3
    assert (len(report.accepted), report.accepted_count) == ((3, None) if listed else (0, 3))


def test_pings_do_not_move_the_content_timer() -> None:
    # An anthropic stream that only pings after its first delta: each ping is a whole message,
    # so the idle timer moves, but the content timer counts from the last token.
    head = list(iter_messages(TokenStreamSpec("anthropic", ("a",))))[:3]  # start, block, "a"
    ping = Message(b'{"type":"ping"}', "ping")
    _, wire = produce_wire("ndjson", [*head, ping, ping, ping], end=False)
    lines = [line + b"\n" for line in wire.split(b"\n")[:-1]]
    config = ConsumerConfig(
        "ndjson",
        payload="tokens",
        token_profile="anthropic",
        idle_timeout_s=2.0,
        content_idle_timeout_s=5.0,
    )
    session = ConsumerSession(config)
    session.connect(0.0)
    session.receive(b"".join(lines[:3]), 1.0)  # the first token at 1 s
    assert session.deadline() == 3.0  # idle: 1 s + 2 s
    for at, line in zip((2.5, 4.0, 5.5), lines[3:], strict=True):
        session.receive(line, at)
    assert session.deadline() == 6.0  # the content timer: 1 s + 5 s, not 5.5 s + 2 s
    session.end_of_stream("timeout", 6.0)
    report = session.report()
    assert (report.verdict, report.error_code) == ("PARTIAL_MID_TOKEN", "IDLE_TIMEOUT")


def test_without_a_content_timeout_pings_keep_the_link_alive() -> None:
    config = ConsumerConfig(
        "ndjson", payload="tokens", token_profile="anthropic", idle_timeout_s=2.0
    )
    session = ConsumerSession(config)
    session.connect(0.0)
    session.receive(b'{"type":"ping"}\n', 9.0)
    assert session.deadline() == 11.0
