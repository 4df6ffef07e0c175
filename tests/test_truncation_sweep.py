"""Every cut of a small stream, in memory: the consumer core fails closed at every byte offset.

For each framing x payload, the wire of one clean connection comes from ``expected_wire``; for
every offset k, a fresh ``ConsumerSession`` gets ``wire[:k]`` in one read and then a FIN
(``"eof"``) or a reset (``"rst"``). No sockets and no clock: the session is pure.

What must hold at every k:

- the accepted messages are exactly the messages committed before k, byte for byte (never a
  shorter or fused one), for opaque messages; an envelope or token stream that is refused hands
  nothing on (fail closed), one that is complete or accepted partial hands on exactly those;
- nothing is complete before the proof of the end (the envelope's trailer, the token stream's
  signal) has fully arrived, and the envelope is TRUNCATED before that, never CHECKSUM_MISMATCH;
- a token stream cut before its signal is PARTIAL_MID_TOKEN, or PARTIAL_SAFE_BOUNDARY exactly
  where no message is in flight when the consumer accepts partial results there.

Where a message "is in flight" is read off the wire (``Layout``), not asked of the codec.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import pytest
from wsproto.utilities import generate_accept_token

from reference_impl.framing import FRAMING_NAMES
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.session import ConsumerSession
from reference_impl.link.spec import ExpectedWire, LinkSpec, expected_wire, iter_payload
from reference_impl.payload import envelope, messages, tokens
from reference_impl.report import ConsumerReport

HTTP2_FRAME_HEADER = 9


def small_link(framing: str, payload: str, profile: str = "generic") -> LinkSpec:
    return LinkSpec(
        framing=framing,
        payload=payload,
        messages=messages.MessagesSpec(count=3, size_bytes=20),
        envelope=envelope.EnvelopeSpec(5, 2),
        tokens=tokens.TokenStreamSpec(profile, tokens.default_tokens(6)),
    )


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each message sits on the wire, in the consumer's terms.

    ``opens[i]``: from the byte after this offset on, message i is in flight; ``commits[i]``:
    the offset at which its last byte has arrived and it is handed on. ``data[i]``: where the
    message's own bytes start.
    """

    opens: tuple[int, ...]
    commits: tuple[int, ...]
    data: tuple[int, ...]

    def committed(self, k: int) -> int:
        return sum(1 for end in self.commits if end <= k)

    def in_flight(self, k: int) -> bool:
        return any(o < k < c for o, c in zip(self.opens, self.commits, strict=True))


def _opens(framing: str, wire: bytes, start: int) -> int:
    """The offset after which a message whose span starts at ``start`` is in flight.

    The HTTP chunk-size line of SSE and NDJSON over HTTP is transport, no part of the message.
    Everything else that frames a message counts from its first byte the codec can place: the
    u32 prefix, the WebSocket frame header (its first byte names the frame), the gRPC DATA
    frame once its type byte (the 4th byte of the HTTP/2 frame header) has arrived.
    """
    if framing in ("sse", "ndjson-http"):
        return wire.index(b"\r\n", start) + 2
    if framing == "grpc":
        return start + 3
    return start


def layout(link: LinkSpec, wire: ExpectedWire) -> Layout:
    # An SSE event is dispatched at its blank line, a line at its LF; the chunk's CRLF follows.
    tail = 2 if link.framing in ("sse", "ndjson-http") else 0
    datas = [m.data for m in iter_payload(link)]
    return Layout(
        opens=tuple(_opens(link.framing, wire.wire, start) for start, _ in wire.spans),
        commits=tuple(end - tail for _, end in wire.spans),
        data=tuple(wire.wire.index(d, s) for d, (s, _) in zip(datas, wire.spans, strict=True)),
    )


_WS_KEY = re.compile(rb"\r\nSec-WebSocket-Key: (\S+)\r\n")
_WS_ACCEPT = re.compile(rb"(?<=\r\nSec-WebSocket-Accept: )\S+")


def _answer_key(request: bytes, wire: bytes) -> bytes:
    """``wire`` with the handshake answer fitted to this client's random key (same length)."""
    key = _WS_KEY.search(request)
    assert key is not None
    return _WS_ACCEPT.sub(generate_accept_token(key.group(1)), wire, count=1)


def cut(
    link: LinkSpec, wire: ExpectedWire, k: int, how: str, accept: bool = False
) -> ConsumerReport:
    """A fresh consumer that read ``wire[:k]`` and then saw the connection end ``how``."""
    config = ConsumerConfig(
        link.framing,
        link.payload,
        link.tokens.profile,
        link.options,
        accept_partial_at_safe_boundary=accept,
    )
    session = ConsumerSession(config)
    request = session.connect(0.0)
    data = wire.wire
    if link.framing == "websocket" and k:
        data = _answer_key(request, data)
    if k:
        session.receive(data[:k], 0.0)
    session.end_of_stream(how, 0.0)
    return session.report()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


CASES = [
    (framing, payload, profile)
    for framing in FRAMING_NAMES
    for payload, profiles in (
        ("messages", ["generic"]),
        ("envelope", ["generic"]),
        ("tokens", list(tokens.PROFILES)),
    )
    for profile in profiles
]


def expected_verdict(link: LinkSpec, where: Layout, k: int, accept: bool) -> str:
    done = k >= where.commits[-1]
    if link.payload == "envelope":
        return "RESULT_VERIFIED" if done else "ERR_ZPARQL_STREAM_TRUNCATED"
    if done:
        return "COMPLETE_EXPLICIT"
    if accept and not where.in_flight(k):
        return "PARTIAL_SAFE_BOUNDARY"
    return "PARTIAL_MID_TOKEN"


@pytest.mark.parametrize(("framing", "payload", "profile"), CASES)
def test_every_cut_fails_closed(framing: str, payload: str, profile: str) -> None:
    link = small_link(framing, payload, profile)
    wire = expected_wire(link)
    where = layout(link, wire)
    sent = [sha(m.data) for m in iter_payload(link)]
    variants = [("eof", False), ("rst", False)]
    if payload == "tokens":
        # A reset and a FIN leave the same message in flight; with partial results refused the
        # guard never looks further, so one of them is enough there (this keeps the sweep short).
        variants = [("eof", False), ("eof", True), ("rst", True)]
    wrong: list[tuple[int, str, bool, str]] = []
    for k in range(len(wire.wire)):
        done = payload != "messages" and k >= where.commits[-1]
        for how, accept in variants:
            report = cut(link, wire, k, how, accept)
            accepted = [a.sha256 for a in report.accepted]
            handed_on = (
                payload == "messages"
                or report.complete
                or (report.verdict == "PARTIAL_SAFE_BOUNDARY")
            )
            if accepted != (sent[: where.committed(k)] if handed_on else []):
                wrong.append((k, how, accept, f"accepted {len(accepted)} messages"))
            if report.complete is not done:
                wrong.append((k, how, accept, f"complete={report.complete}"))
            if payload != "messages" and report.verdict != expected_verdict(link, where, k, accept):
                wrong.append((k, how, accept, report.verdict))
    assert wrong == []


@pytest.mark.parametrize("how", ["eof", "rst"])
@pytest.mark.parametrize("framing", FRAMING_NAMES)
def test_messages_verdict_inside_and_between(framing: str, how: str) -> None:
    link = small_link(framing, "messages")
    wire = expected_wire(link)
    where = layout(link, wire)
    datas = [m.data for m in iter_payload(link)]
    for start, data in zip(where.data, datas, strict=True):
        middle = cut(link, wire, start + len(data) // 2, how)
        assert (middle.verdict, middle.complete) == ("STALE_PARTIAL_BUFFER", False)
        assert middle.recorded.partial_buffer_state_hash is not None
    for _, end in wire.spans:
        between = cut(link, wire, end, how)
        assert (between.verdict, between.complete) == ("MESSAGE_COMPLETE", False)
        assert between.recorded.partial_buffer_state_hash is None
