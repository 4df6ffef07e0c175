"""Command-line options that describe a link, shared by ``tearline produce|consume|demo``."""

from __future__ import annotations

import argparse
import ssl

from reference_impl import defaults
from reference_impl.framing import DEFAULT_MAX_MESSAGE_BYTES, FRAMING_NAMES, FramingOptions
from reference_impl.link.consumer_config import ConsumerConfig, ConsumerPolicy
from reference_impl.link.spec import LinkSpec
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
    group.add_argument(
        "--path",
        default=defaults.REQUEST_PATH,
        help="SSE/WebSocket request target or gRPC method the consumer asks for",
    )


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
        options=FramingOptions(
            sse_body=args.sse_body, max_message_bytes=args.max_message_bytes, path=args.path
        ),
    )


def optional_count(text: str) -> int | None:
    """A count, or '' for none (the contract's ``{pause_at_message}`` without a pause)."""
    if not text:
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a count or nothing, got {text!r}")
    return int(text)


def add_consumer_arguments(parser: argparse.ArgumentParser) -> None:
    """The consumer's own settings (``tearline consume``): every value of the consumer
    contract (``harness.running.external.contract_values``) is one of these options or of the
    link's (``add_link_arguments``)."""
    group = parser.add_argument_group("consumer")
    group.add_argument("--incomplete-message-timeout-ms", type=float, default=1000.0)
    group.add_argument("--idle-timeout-ms", type=float, default=5000.0)
    group.add_argument(
        "--accept-partial-at-safe-boundary", choices=("true", "false"), default="false"
    )
    group.add_argument("--max-reconnects", type=int, default=0)
    group.add_argument(
        "--producer-mode",
        choices=("restart", "continue"),
        default="restart",
        help="what a reconnect gets: the stream from its start, or (SSE) resumed after the "
        "Last-Event-ID sent",
    )
    group.add_argument(
        "--read-bytes", type=int, default=defaults.READ_BYTES, help="bytes asked for per read"
    )
    group.add_argument(
        "--pause-at-message",
        type=optional_count,
        default=None,
        metavar="N",
        help="seed 000's pause: after N messages, with one in flight ('' or left out: none)",
    )
    group.add_argument("--pause-ms", type=float, default=0.0, help="how long that pause lasts")
    group.add_argument(
        "--unframed",
        choices=("true", "false"),
        default="false",
        help="treat the stream as unframed (seed 000 gate 1: refuse it, DISCARD_AND_RESET)",
    )
    group.add_argument(
        "--deadline-ms",
        type=float,
        default=None,
        metavar="MS",
        help="give up with no report (exit 3) once this long has passed",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        help="connect over TLS, trusting the system's CAs (and those of SSL_CERT_FILE)",
    )
    group.add_argument(
        "--ca-file",
        default="",
        metavar="FILE",
        help="connect over TLS, trusting the CAs of this PEM file (tearline run passes "
        "{ca_file}; empty: plain TCP unless --tls)",
    )


def add_producer_tls_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("TLS")
    group.add_argument(
        "--certfile",
        default=None,
        metavar="PEM",
        help="serve TLS with this certificate (chain); its key in it or in --keyfile",
    )
    group.add_argument("--keyfile", default=None, metavar="PEM", help="the certificate's key")


def producer_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The server context of ``--certfile``/``--keyfile`` (None: plain TCP), ALPN by the
    framing as ``consumer_tls``."""
    if args.certfile is None:
        if args.keyfile is not None:
            raise SystemExit("tearline produce: --keyfile needs --certfile")
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(args.certfile, args.keyfile)
    except (OSError, ValueError) as err:
        raise SystemExit(f"tearline produce: --certfile {args.certfile}: {err}") from None
    context.set_alpn_protocols(_alpn(args.framing))
    return context


def _alpn(framing: str) -> list[str]:
    return ["h2"] if framing == "grpc" else ["http/1.1"]


def consumer_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The client context of ``--tls``/``--ca-file`` (None: plain TCP). ALPN as the proxy
    offers it: h2 for gRPC, http/1.1 otherwise."""
    if not args.tls and not args.ca_file:
        return None
    try:
        context = ssl.create_default_context(cafile=args.ca_file or None)
    except (OSError, ValueError) as err:
        raise SystemExit(f"tearline consume: --ca-file {args.ca_file}: {err}") from None
    context.set_alpn_protocols(_alpn(args.framing))
    return context


def consumer_config(
    link: LinkSpec,
    timeout_s: float = 1.0,
    *,
    idle_timeout_s: float = 5.0,
    accept_partial_at_safe_boundary: bool = False,
    resume: bool = False,
    unframed: bool = False,
) -> ConsumerConfig:
    return ConsumerConfig(
        framing=link.framing,
        payload=link.payload,
        token_profile=link.tokens.profile,
        framing_options=link.options,
        incomplete_message_timeout_s=timeout_s,
        idle_timeout_s=idle_timeout_s,
        accept_partial_at_safe_boundary=accept_partial_at_safe_boundary,
        resume=resume,
        unframed=unframed,
    )


def consumer_policy(args: argparse.Namespace) -> ConsumerPolicy:
    """What ``tearline consume``'s options tell the reference consumer."""
    config = consumer_config(
        link_from_args(args),
        args.incomplete_message_timeout_ms / 1000,
        idle_timeout_s=args.idle_timeout_ms / 1000,
        accept_partial_at_safe_boundary=args.accept_partial_at_safe_boundary == "true",
        resume=args.producer_mode == "continue",
        unframed=args.unframed == "true",
    )
    return ConsumerPolicy(
        config,
        read_bytes=args.read_bytes,
        max_reconnects=args.max_reconnects,
        pause_at_message=args.pause_at_message,
        pause_ms=args.pause_ms,
    )
