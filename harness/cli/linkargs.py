"""Command-line options that describe a link, shared by ``tearline produce|consume|demo``."""

from __future__ import annotations

import argparse
import base64
import json
import ssl

from reference_impl import defaults
from reference_impl.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    FRAMING_NAMES,
    FramingOptions,
    alpn_protocols,
)
from reference_impl.framing.request import Request, parse_header
from reference_impl.link.consumer_config import ConsumerConfig, ConsumerPolicy
from reference_impl.link.spec import LinkSpec
from reference_impl.payload import envelope, messages, tokens

PAYLOADS = ("messages", "envelope", "tokens")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


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
    add_http_body_argument(group)
    group.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    add_request_arguments(parser)


def add_http_body_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--http-body`` (or its first name, ``--sse-body``): how an HTTP response body ends."""
    parser.add_argument(
        "--http-body",
        "--sse-body",
        dest="sse_body",
        choices=("chunked", "close"),
        default="chunked",
        help="sse, ndjson-http: the response body is chunked or ends at the close",
    )


def header_line(text: str) -> str:
    """``Name: value`` for argparse (as curl's ``-H``)."""
    try:
        parse_header(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def add_request_arguments(parser: argparse.ArgumentParser) -> None:
    """What the consumer sends, curl's way (``tearline consume``, ``record``, ``run``); for
    ``tearline produce``, what it serves."""
    group = parser.add_argument_group("request (as curl takes it)")
    group.add_argument(
        "--path",
        default=None,
        help="the request target, or the gRPC method (default /stream)",
    )
    group.add_argument(
        "-X", "--method", choices=METHODS, default=None, help="default GET, POST with a body"
    )
    group.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        type=header_line,
        default=[],
        metavar="'NAME: VALUE'",
        help="a request header (repeatable); {host} and {port} are filled in",
    )
    body = group.add_mutually_exclusive_group()
    body.add_argument("-d", "--data", default=None, metavar="TEXT", help="the request body")
    body.add_argument("--data-file", default=None, metavar="FILE", help="the body, from a file")
    body.add_argument(
        "--request-file",
        default=None,
        metavar="FILE",
        help="the whole request as tearline run hands it to a consumer program "
        "({request_file}: JSON with method, path, headers, base64 body)",
    )
    group.add_argument(
        "--json-body",
        nargs="?",
        const=True,
        default=None,
        metavar="TEXT",
        help="send the body (TEXT, or --data/--data-file) as Content-Type: application/json "
        "(curl's --json; tearline's --json prints the report as JSON)",
    )


def request_from_args(args: argparse.Namespace, command: str) -> Request:
    """The request the options describe; ``SystemExit`` with one line for a body that cannot
    be read or is too large, or too many headers."""
    if getattr(args, "request_file", None) is not None:
        return _request_file(args.request_file, command)
    headers = [parse_header(line) for line in args.headers]
    body = b""
    if isinstance(args.json_body, str):
        if args.data is not None or args.data_file is not None:
            raise SystemExit(f"tearline {command}: --json-body TEXT is the body: no --data with it")
        body = args.json_body.encode()
    elif args.data is not None:
        body = args.data.encode()
    elif args.data_file is not None:
        body = _read_body(args.data_file, command)
    if args.json_body is not None and not any(n.lower() == "content-type" for n, _ in headers):
        headers.append(("Content-Type", "application/json"))
    if len(body) > defaults.MAX_REQUEST_BODY_BYTES:
        raise SystemExit(
            f"tearline {command}: the body has {len(body)} bytes; at most "
            f"{defaults.MAX_REQUEST_BODY_BYTES}"
        )
    if len(headers) > defaults.MAX_REQUEST_HEADERS:
        limit = defaults.MAX_REQUEST_HEADERS
        raise SystemExit(f"tearline {command}: {len(headers)} headers; at most {limit}")
    path = args.path or defaults.REQUEST_PATH
    return Request(method=args.method, path=path, headers=tuple(headers), body=body)


def _request_file(path: str, command: str) -> Request:
    """The request of a ``{request_file}``; ``SystemExit`` with one line for one that cannot
    be read."""
    try:
        with open(path, "rb") as file:
            raw = json.loads(file.read(4 * defaults.MAX_REQUEST_BODY_BYTES))
        headers = tuple((str(name), str(value)) for name, value in raw["headers"])
        body = base64.b64decode(raw["body"], validate=True)
        return Request(str(raw["method"]), str(raw["path"]), headers, body)
    except OSError as err:
        raise SystemExit(f"tearline {command}: --request-file {path}: {err.strerror}") from None
    except (ValueError, KeyError, TypeError) as err:
        message = f"--request-file {path}: not a request file ({type(err).__name__}: {err})"
        raise SystemExit(f"tearline {command}: {message}") from None


def _read_body(path: str, command: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(defaults.MAX_REQUEST_BODY_BYTES + 1)
    except OSError as err:
        raise SystemExit(f"tearline {command}: --data-file {path}: {err.strerror}") from None


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
            sse_body=args.sse_body,
            max_message_bytes=args.max_message_bytes,
            request=request_from_args(args, args.command or "link"),
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
    return list(alpn_protocols(framing))


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
