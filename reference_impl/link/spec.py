"""A link = a framing carrying a payload: its spec, its messages, and its expected wire.

Pure. The producer sends ``iter_payload(spec)``; the runner resolves fault positions against
``expected_wire(spec)``, a dry run of the same codecs in memory that records where each message's
bytes sit on the producer->consumer wire.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from reference_impl import defaults
from reference_impl.errors import CodecError
from reference_impl.events import Event, Message
from reference_impl.framing import FramingOptions, make_client, make_server
from reference_impl.framing.base import ClientCodec, ServerCodec
from reference_impl.payload import envelope, messages, tokens
from reference_impl.payload.registry import payload

UNLIMITED_MESSAGE_BYTES = 2**31


@dataclass(frozen=True, slots=True)
class LinkSpec:
    framing: str = "length-prefixed"
    payload: str = "messages"  # messages | envelope | tokens
    messages: messages.MessagesSpec = field(
        default_factory=lambda: messages.MessagesSpec(
            defaults.MESSAGE_COUNT, defaults.MESSAGE_BYTES
        )
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
    """The producer's messages from index ``start`` (0-based), each numbered (``id``: its
    1-based index) so that a framing with a resume cursor can write it (SSE's ``id:``, which a
    reconnecting consumer sends back as Last-Event-ID); the others ignore it."""
    kind = payload(spec.payload)
    source = kind.iter_messages(getattr(spec, kind.spec_field))
    for index, message in enumerate(source):
        if index >= start:
            yield Message(message.data, message.kind, str(index + 1))


def content_messages(spec: LinkSpec) -> int:
    """How many leading messages carry the result (the payload's rule)."""
    kind = payload(spec.payload)
    return kind.content_count(getattr(spec, kind.spec_field), list(iter_payload(spec)))


@dataclass(frozen=True, slots=True)
class ExpectedWire:
    """The producer->consumer bytes of one clean connection, and where each message sits."""

    request: bytes
    wire: bytes
    #: ``[start, end)`` of the bytes emitted for message i+1 (framing overhead included)
    spans: tuple[tuple[int, int], ...]
    #: offset of the stream's end (trailers, close frame, chunk terminator) bytes
    end_span: tuple[int, int]
    #: the producer refused the request (its route serves another): the wire is the refusal
    refused: bool = False

    @property
    def messages(self) -> int:
        return len(self.spans)


@dataclass(slots=True)
class _Pipe:
    """The bytes between two codecs in memory: what the server wrote (``wire``), rewritten at
    ``changes`` (offset -> byte) on their way to the client, and what the client made of them."""

    client: ClientCodec
    server: ServerCodec
    changes: Mapping[int, int] = field(default_factory=dict)
    wire: bytearray = field(default_factory=bytearray)
    events: list[Event] = field(default_factory=list)
    error: CodecError | None = None

    def pump(self) -> None:
        """Move bytes both ways until neither side has anything to say."""
        for _ in range(1_000_000):
            up = b"" if self.error else self.client.data_to_send()
            if up:
                self.server.receive_data(up)
            down = self.server.data_to_send()
            if down:
                self._deliver(down)
            if not up and not down:
                return
        raise RuntimeError("codecs did not settle")

    def _deliver(self, data: bytes) -> None:
        start = len(self.wire)
        self.wire += data
        if self.error is not None:
            return
        if self.changes:
            data = bytes(self.changes.get(start + i, b) for i, b in enumerate(data))
        try:
            self.events += self.client.receive_data(data)
        except CodecError as err:
            self.events += err.events
            self.error = err


def pump(client: ClientCodec, server: ServerCodec, wire: bytearray) -> None:
    """Move bytes both ways between two codecs in memory until neither has anything to say;
    what the server sent is appended to ``wire``; a client's CodecError propagates."""
    pipe = _Pipe(client, server, wire=wire)
    pipe.pump()
    if pipe.error is not None:
        raise pipe.error


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
    pipe = _Pipe(client, server)
    pipe.pump()
    spans: list[tuple[int, int]] = []
    if server.refused is not None:  # the route does not serve the request: no stream
        wire = bytes(pipe.wire)
        return ExpectedWire(request, wire, (), (len(wire), len(wire)), refused=True)
    for message in iter_payload(spec):
        start = len(pipe.wire)
        server.send_message(message)
        pipe.pump()
        spans.append((start, len(pipe.wire)))
    start = len(pipe.wire)
    server.end()
    pipe.pump()
    wire = bytes(pipe.wire)
    return ExpectedWire(request, wire, tuple(spans), (start, len(wire)))


def decode_changed(
    spec: LinkSpec, changes: Mapping[int, int]
) -> tuple[list[Message], CodecError | None]:
    """What the reference consumer's codec makes of the clean stream with the bytes at
    ``changes`` (offset -> new byte) rewritten: the messages it decodes, and the error it
    stops at, if any. How a harness tells whether a change is visible at all to the framing."""
    client = make_client(spec.framing, spec.options)
    server = make_server(spec.framing, spec.options)
    server.receive_data(client.initiate())
    pipe = _Pipe(client, server, changes)
    pipe.pump()
    if server.refused is None:  # a refused request is answered with no stream
        for message in iter_payload(spec):
            server.send_message(message)
            pipe.pump()
        server.end()
        pipe.pump()
    if pipe.error is None:
        try:
            pipe.events += client.receive_eof()
        except CodecError as err:
            pipe.events += err.events
            pipe.error = err
    return [e for e in pipe.events if isinstance(e, Message)], pipe.error
