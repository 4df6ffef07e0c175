"""A scenario's ``link`` as the reference link's configs: the one place the two models meet.

The scenario model (``harness.scenario.model``) says what a QA engineer writes; the reference
producer, consumer and codecs have configs of their own (``LinkSpec``, ``ConsumerConfig``,
``ConsumerPolicy``, ``ProducerConfig``). Both take their defaults from
``reference_impl.defaults``, and this module maps one onto the other, field by field, for the
runner, the external-consumer contract and the command line alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import FieldError
from harness.link.live import LinkTraits
from harness.link.prepared import PreparedLink, prepare
from harness.scenario.model import (
    EnvelopeConfig,
    Link,
    McpConfig,
    MessagesConfig,
    RequestConfig,
    Scenario,
    TokensConfig,
)
from reference_impl.defaults import MAX_REQUEST_BODY_BYTES
from reference_impl.framing import FramingOptions
from reference_impl.framing.request import Request, Route, parse_header
from reference_impl.link.consumer_config import ConsumerConfig, ConsumerPolicy
from reference_impl.link.spec import LinkSpec, ProducerConfig
from reference_impl.payload import envelope, messages, tokens


def framing_options(link: Link) -> FramingOptions:
    options = link.framing_options
    return FramingOptions(
        max_message_bytes=options.max_message_bytes,
        sse_body=options.sse_body,
        ws_text=options.ws_text,
        ws_fragment_bytes=options.ws_fragment_bytes,
        request=request_of(link),
        route=route_of(link),
    )


def request_of(link: Link) -> Request:
    """What the link's consumer sends (``FieldError`` for a ``body_file`` it cannot read)."""
    given = link.request
    return Request(
        method=given.method,
        path=link.request_path,
        headers=tuple(parse_header(line) for line in given.headers),
        body=_body(given),
    )


def _body(given: RequestConfig) -> bytes:
    if given.body is not None:
        return given.body.encode()
    if given.body_file is None:
        return b""
    try:
        with open(given.body_file, "rb") as file:
            body = file.read(MAX_REQUEST_BODY_BYTES + 1)
    except OSError as err:
        message = f"cannot read {given.body_file}: {err.strerror or err}"
        raise FieldError(message, path=("request", "body_file")) from None
    if len(body) > MAX_REQUEST_BODY_BYTES:
        message = f"{given.body_file} is over {MAX_REQUEST_BODY_BYTES} bytes"
        raise FieldError(message, path=("request", "body_file"))
    return body


def route_of(link: Link) -> Route | None:
    """What the reference producer serves: a link that describes its API (a ``request`` or
    ``producer.serves``) that API only, as the API's own service would; else any request
    (None), as a test server does."""
    serves = link.producer.serves
    if serves is None and link.request == RequestConfig():
        return None
    request = request_of(link)
    served = Route.of(request, link.framing)
    if serves is None:
        return served
    return Route(
        path=serves.path or served.path,
        method=serves.method or served.method,
        content_type=serves.content_type or served.content_type,
    )


def link_spec(link: Link) -> LinkSpec:
    """The reference link for a scenario's ``link`` section."""
    config = link.payload_config
    if isinstance(config, McpConfig):  # its streams are the session's (harness/running/mcp_case)
        message = "an MCP session has no reference stream of its own (nor a 'to: end')"
        raise FieldError(message, path=("payload",))
    base = LinkSpec(framing=link.framing, payload=link.payload, options=framing_options(link))
    if isinstance(config, MessagesConfig):
        spec = messages.MessagesSpec(config.message_count, config.message_bytes, config.texts)
        return LinkSpec(base.framing, base.payload, messages=spec, options=base.options)
    if isinstance(config, EnvelopeConfig):
        spec_e = envelope.EnvelopeSpec(config.records, config.chunk_records)
        return LinkSpec(base.framing, base.payload, envelope=spec_e, options=base.options)
    assert isinstance(config, TokensConfig)
    spec_t = tokens.TokenStreamSpec(
        config.profile,
        tokens.default_tokens(config.count, 0),
        advertise_length=config.advertise_length,
        send_completion=config.send_completion,
        stop_reason=config.stop_reason,
        tools=config.tools,
        length_limited=config.length_limited,
        thinking=config.thinking,
    )
    return LinkSpec(base.framing, base.payload, tokens=spec_t, options=base.options)


def consumer_config(link: Link, spec: LinkSpec | None = None) -> ConsumerConfig:
    """What the reference consumer's pure core is told."""
    spec = spec or link_spec(link)
    consumer = link.consumer
    return ConsumerConfig(
        framing=link.framing,
        payload=link.payload,
        token_profile=spec.tokens.profile,
        framing_options=spec.options,
        incomplete_message_timeout_s=consumer.incomplete_message_timeout_ms / 1000,
        idle_timeout_s=consumer.idle_timeout_ms / 1000,
        content_idle_timeout_s=None
        if consumer.content_idle_timeout_ms is None
        else consumer.content_idle_timeout_ms / 1000,
        accept_partial_at_safe_boundary=consumer.accept_partial_at_safe_boundary,
        resume=link.producer.mode == "continue",
        unframed=consumer.unframed,
    )


def consumer_policy(link: Link, spec: LinkSpec | None = None) -> ConsumerPolicy:
    """What the reference consumer's shell is told."""
    consumer = link.consumer
    return ConsumerPolicy(
        consumer_config(link, spec),
        read_bytes=consumer.read_bytes,
        max_reconnects=consumer.max_reconnects,
        pause_at_message=consumer.pause_at_message,
        pause_ms=consumer.pause_ms,
    )


def producer_config(link: Link, spec: LinkSpec | None = None) -> ProducerConfig:
    """What the reference producer serves."""
    return ProducerConfig(
        spec or link_spec(link),
        resume=link.producer.mode == "continue",
        channel_capacity=link.producer.channel_capacity_chunks,
    )


def link_traits(link: Link, spec: LinkSpec | None = None) -> LinkTraits:
    """What the proxy decodes the producer's live stream with."""
    spec = spec or link_spec(link)
    return LinkTraits(link.framing, spec.options, link.payload, spec.tokens.profile)


@dataclass(frozen=True, slots=True)
class ReferenceLink:
    """Everything a case's link is derived into, derived once: the reference link's
    description, what its producer serves, what its consumer is told, and what the proxy
    decodes the producer's live stream with."""

    spec: LinkSpec
    producer: ProducerConfig
    consumer: ConsumerPolicy
    traits: LinkTraits


def reference_link(link: Link) -> ReferenceLink:
    """The reference link of a scenario's ``link`` section (``FieldError`` if it cannot be
    made)."""
    spec = link_spec(link)
    return ReferenceLink(
        spec,
        producer_config(link, spec),
        consumer_policy(link, spec),
        link_traits(link, spec),
    )


def prepared_link(scenario: Scenario) -> PreparedLink:
    """The prepared link of a scenario (``FieldError`` if the reference link cannot make
    it); what sweep expansion measures ``to: end`` with."""
    return prepare(link_spec(scenario.link))
