"""A link = a framing carrying a payload: its spec, its messages, and its expected wire.

Pure. The producer sends ``iter_payload(spec)``; the runner resolves fault positions against
``expected_wire(spec)``, a dry run of the same codecs in memory that records where each message's
bytes sit on the producer->consumer wire.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from reference_impl import defaults
from reference_impl.events import Message
from reference_impl.framing import FramingOptions, make_client, make_server
from reference_impl.framing.base import ClientCodec, ServerCodec
from reference_impl.payload import envelope, messages, tokens

UNLIMITED_MESSAGE_BYTES = 2**31


@dataclass(frozen=True, slots=True)
class LinkSpec:
    framing: str = "length-prefixed"
    payload: str = "messages"  # messages | envelope | tokens
    messages: messages.MessagesSpec = field(
        default_factory=lambda: messages.MessagesSpec(defaults.MESSAGE_COUNT, defaults.MESSAGE_BYTES)
    )
    envelope: envelope.EnvelopeSpec = field(
        default_factory=lambda: envelope.EnvelopeSpec(
            defaults.ENVELOPE_RECORDS, defaults.ENVELOPE_CHUNK_RECORDS
        )
    )
    tokens: tokens.TokenStreamSpec = field(
        default_factory=lambda: tokens.TokenStreamSpec(
            defaults.TOKEN_PROFILE, tokens.default_tokens(defaults.TOKEN_COUNT, 0)
        )
    )
    options: FramingOptions = field(default_factory=FramingOptions)


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """What the reference producer (``producer.py``) serves, and how."""

    link: LinkSpec = field(default_factory=LinkSpec)
    #: on a reconnect: restart the stream, or continue after what was already sent
    resume: bool = False
    #: C_cap of seed 001: messages the traversal may run ahead of the socket
    channel_capacity: int = defaults.CHANNEL_CAPACITY_CHUNKS


def iter_payload(spec: LinkSpec, start: int = 0) -> Iterator[Message]:
    """The producer's messages from index ``start`` (0-based). SSE messages carry their 1-based
    index as ``id`` so a reconnecting consumer can say where it stopped (Last-Event-ID)."""
    if spec.payload == "messages":
        source: Iterator[Message] = messages.iter_messages(spec.messages)
    elif spec.payload == "envelope":
        source = envelope.iter_messages(spec.envelope)
    elif spec.payload == "tokens":
        source = tokens.iter_messages(spec.tokens)
    else:
        raise ValueError(f"unknown payload {spec.payload!r}")
    for index, message in enumerate(source):
        if index < start:
            continue
        sse = spec.framing == "sse"
        yield Message(message.data, message.kind, str(index + 1)) if sse else message


def content_messages(spec: LinkSpec) -> int:
    """How many leading messages carry the result. A token stream's result is its tokens:
    what follows the last token (finish frame, completion signal) proves the end but adds no
    content, so a stream complete by its advertised length may lack it (seed 002 gate 2)."""
    if spec.payload != "tokens":
        return sum(1 for _ in iter_payload(spec))
    count = 0
    tracker = tokens.TokenTracker(spec.tokens.profile)
    for index, message in enumerate(iter_payload(spec), start=1):
        before = tracker.received_tokens
        tracker.feed(message)
        if tracker.received_tokens > before:
            count = index
    return count


@dataclass(frozen=True, slots=True)
class ExpectedWire:
    """The producer->consumer bytes of one clean connection, and where each message sits."""

    request: bytes
    wire: bytes
    #: ``[start, end)`` of the bytes emitted for message i+1 (framing overhead included)
    spans: tuple[tuple[int, int], ...]
    #: offset of the stream's end (trailers, close frame, chunk terminator) bytes
    end_span: tuple[int, int]

    @property
    def messages(self) -> int:
        return len(self.spans)


def pump(client: ClientCodec, server: ServerCodec, wire: bytearray) -> None:
    """Move bytes both ways between two codecs in memory until neither has anything to say;
    what the server sent is appended to ``wire``."""
    for _ in range(1_000_000):
        up = client.data_to_send()
        if up:
            server.receive_data(up)
        down = server.data_to_send()
        if down:
            wire += down
            client.receive_data(down)
        if not up and not down:
            return
    raise RuntimeError("codecs did not settle")


def expected_wire(spec: LinkSpec) -> ExpectedWire:
    """Dry-run the link's codecs in memory (keeps the whole wire: meant for scenario-sized
    streams)."""
    # The dry-run client only acknowledges: it must accept whatever the producer sends, even
    # messages above the consumer's max_message_bytes (a scenario may send them on purpose).
    options = replace(spec.options, max_message_bytes=UNLIMITED_MESSAGE_BYTES)
    client = make_client(spec.framing, options)
    server = make_server(spec.framing, spec.options)
    request = client.initiate()
    server.receive_data(request)
    wire = bytearray()
    pump(client, server, wire)
    spans: list[tuple[int, int]] = []
    for message in iter_payload(spec):
        start = len(wire)
        server.send_message(message)
        pump(client, server, wire)
        spans.append((start, len(wire)))
    start = len(wire)
    server.end()
    pump(client, server, wire)
    return ExpectedWire(request, bytes(wire), tuple(spans), (start, len(wire)))
