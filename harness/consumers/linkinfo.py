"""A scenario's link as the ``LinkInfo`` a consumer function is given (pure)."""

from __future__ import annotations

from harness.consumers.api import LinkInfo, url_for
from harness.link.reference import request_of
from harness.scenario import Link, TokensConfig


def link_info(
    link: Link, host: str, port: int, deadline_s: float = 10.0, ca_file: str | None = None
) -> LinkInfo:
    """What the consumer function of one case is told: every value of the external-program
    contract (``docs/consumer-contract.md``), times in seconds, plus the URL and ``ws_text``;
    ``ca_file``: the run's test CA over TLS."""
    consumer, options = link.consumer, link.framing_options
    tokens = link.payload_config if isinstance(link.payload_config, TokensConfig) else None
    request = request_of(link).filled(host, port)
    return LinkInfo(
        host=host,
        port=port,
        framing=link.framing,
        payload=link.payload,
        profile=None if tokens is None else tokens.profile,
        url=url_for(link.framing, host, port, request.path),
        path=request.path,
        method=request.method_for(link.framing),
        headers=request.headers,
        body=request.body,
        incomplete_message_timeout_s=consumer.incomplete_message_timeout_ms / 1000,
        idle_timeout_s=consumer.idle_timeout_ms / 1000,
        deadline_s=deadline_s,
        max_reconnects=consumer.max_reconnects,
        max_message_bytes=options.max_message_bytes,
        accept_partial_at_safe_boundary=consumer.accept_partial_at_safe_boundary,
        sse_body=options.sse_body,
        ws_text=options.ws_text,
        producer_mode=link.producer.mode,
        read_bytes=consumer.read_bytes,
        pause_at_message=consumer.pause_at_message,
        pause_s=consumer.pause_ms / 1000,
        unframed=consumer.unframed,
        tls=link.tls,
        ca_file=ca_file if link.tls else None,
    )
