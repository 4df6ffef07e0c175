"""A scenario's link as the ``LinkInfo`` a consumer function is given (pure)."""

from __future__ import annotations

from harness.consumers.api import LinkInfo, url_for
from harness.link.reference import request_of
from harness.scenario import Link, TokensConfig


def link_info(link: Link, host: str, port: int, deadline_s: float = 10.0) -> LinkInfo:
    """What the consumer function of one case is told: the values of the external-program
    contract (``docs/consumer-contract.md``), in seconds, plus the URL and producer mode."""
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
        ca_file=None,
    )
