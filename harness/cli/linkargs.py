"""Command-line options that describe a link, shared by ``tearline produce|consume|demo``."""

from __future__ import annotations

import argparse

from reference_impl.consumer_config import ConsumerConfig
from reference_impl.framing import DEFAULT_MAX_MESSAGE_BYTES, FRAMING_NAMES, FramingOptions
from reference_impl.link import LinkSpec
from reference_impl.payload import envelope, messages, tokens

PAYLOADS = ("messages", "envelope", "tokens")


def hostport(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (IPv6 in brackets) for argparse."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def add_link_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("link")
    group.add_argument("--framing", choices=FRAMING_NAMES, default="sse")
    group.add_argument("--payload", choices=PAYLOADS, default="envelope")
    group.add_argument("--count", type=int, default=5, help="messages payload: how many")
    group.add_argument("--size-bytes", type=int, default=64, help="messages payload: size each")
    group.add_argument("--records", type=int, default=1000, help="envelope payload: records")
    group.add_argument("--chunk-records", type=int, default=50, help="envelope payload: B")
    group.add_argument(
        "--profile",
        choices=tokens.PROFILES,
        default="openai",
        help="tokens payload: producer profile",
    )
    group.add_argument("--tokens", type=int, default=40, help="tokens payload: how many")
    group.add_argument(
        "--advertise-length",
        action="store_true",
        help="tokens payload: advertise the token count up front",
    )
    group.add_argument("--sse-body", choices=("chunked", "close"), default="chunked")
    group.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)


def link_from_args(args: argparse.Namespace) -> LinkSpec:
    return LinkSpec(
        framing=args.framing,
        payload=args.payload,
        messages=messages.MessagesSpec(count=args.count, size_bytes=args.size_bytes),
        envelope=envelope.EnvelopeSpec(args.records, args.chunk_records),
        tokens=tokens.TokenStreamSpec(
            args.profile,
            tokens.default_tokens(args.tokens, 0),
            advertise_length=args.advertise_length,
        ),
        options=FramingOptions(sse_body=args.sse_body, max_message_bytes=args.max_message_bytes),
    )


def add_consumer_arguments(parser: argparse.ArgumentParser) -> None:
    """The consumer's own settings (``tearline consume``), as the contract passes them."""
    group = parser.add_argument_group("consumer")
    group.add_argument("--incomplete-message-timeout-ms", type=float, default=1000.0)
    group.add_argument("--idle-timeout-ms", type=float, default=5000.0)
    group.add_argument(
        "--accept-partial-at-safe-boundary", choices=("true", "false"), default="false"
    )
    group.add_argument("--max-reconnects", type=int, default=0)


def consumer_config(
    link: LinkSpec,
    timeout_s: float = 1.0,
    *,
    idle_timeout_s: float = 5.0,
    accept_partial_at_safe_boundary: bool = False,
) -> ConsumerConfig:
    return ConsumerConfig(
        framing=link.framing,
        payload=link.payload,
        token_profile=link.tokens.profile,
        framing_options=link.options,
        incomplete_message_timeout_s=timeout_s,
        idle_timeout_s=idle_timeout_s,
        accept_partial_at_safe_boundary=accept_partial_at_safe_boundary,
    )
