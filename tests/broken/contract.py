"""The consumer contract as every broken consumer speaks it, done right.

A broken consumer is a small program a team might have written: it reads its target from the
environment tearline sets (``TEARLINE_HOST``, ``TEARLINE_PORT``, ``TEARLINE_FRAMING``,
``TEARLINE_PAYLOAD``, ``TEARLINE_PROFILE``, the timeouts, ``TEARLINE_MAX_RECONNECTS``,
``TEARLINE_PRODUCER_MODE``, ...: ``docs/consumer-contract.md``), consumes one stream and prints
one JSON report (``reference_impl.report``) as its last line of output. Nothing in this module is
buggy: each bug lives in its own module, so that a catch is always the catch of that one bug.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
from dataclasses import dataclass, field

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.framing.request import Request
from reference_impl.report import Accepted, ConnectionSummary, ConsumerReport, Recorded, to_json

#: how long a consumer waits at a message boundary before calling the link dead when the
#: contract does not say (the scenario default ``idle_timeout_ms``)
IDLE_TIMEOUT_S = 5.0
READ_BYTES = 65536
ALL_PAYLOADS = ("messages", "envelope", "tokens")


@dataclass(frozen=True, slots=True)
class Target:
    """What tearline asks the consumer to consume."""

    host: str
    port: int
    framing: str
    payload: str
    profile: str
    incomplete_message_timeout_s: float
    idle_timeout_s: float = IDLE_TIMEOUT_S
    max_reconnects: int = 0
    #: what a reconnect gets: ``restart`` (the stream again) or ``continue`` (SSE, resumed
    #: after the ``Last-Event-ID`` sent)
    producer_mode: str = "restart"
    sse_body: str = "chunked"
    accept_partial_at_safe_boundary: bool = False
    #: the request to make (``{request_file}``); the framing's default when the contract does
    #: not pass one
    request: Request = field(default_factory=Request)

    @classmethod
    def from_env(cls) -> Target:
        env = os.environ
        return cls(
            host=env["TEARLINE_HOST"],
            port=int(env["TEARLINE_PORT"]),
            framing=env["TEARLINE_FRAMING"],
            payload=env["TEARLINE_PAYLOAD"],
            profile=env.get("TEARLINE_PROFILE", "openai"),
            incomplete_message_timeout_s=float(
                env.get("TEARLINE_INCOMPLETE_MESSAGE_TIMEOUT_MS", "1000")
            )
            / 1000,
            idle_timeout_s=float(env.get("TEARLINE_IDLE_TIMEOUT_MS", "5000")) / 1000,
            max_reconnects=int(env.get("TEARLINE_MAX_RECONNECTS", "0")),
            producer_mode=env.get("TEARLINE_PRODUCER_MODE", "restart"),
            sse_body=env.get("TEARLINE_SSE_BODY", "chunked"),
            accept_partial_at_safe_boundary=env.get(
                "TEARLINE_ACCEPT_PARTIAL_AT_SAFE_BOUNDARY", "false"
            )
            == "true",
            request=read_request(env.get("TEARLINE_REQUEST_FILE", "")),
        )


def read_request(path: str) -> Request:
    """The request of a ``{request_file}`` (``docs/consumer-contract.md``)."""
    if not path:
        return Request()
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    headers = tuple((str(name), str(value)) for name, value in data["headers"])
    body = base64.b64decode(data["body"])
    return Request(data["method"], data["path"], headers, body)


def connect(target: Target) -> socket.socket:
    """A TCP connection to the link (through tearline's proxy).

    The connect itself blocks: with a timeout, Python connects without blocking and then asks
    the socket for its error, and a proxy that resets the connection at once would make that
    look like a failed connect instead of the reset it is."""
    return socket.create_connection((target.host, target.port))


def send(sock: socket.socket, data: bytes) -> None:
    """Send what the protocol owes the producer. A failed send is not the verdict: the next
    read says how the link ended."""
    if data:
        with contextlib.suppress(OSError):
            sock.sendall(data)


def read_some(
    sock: socket.socket, target: Target, in_message: bool, size: int = READ_BYTES
) -> tuple[bytes, str]:
    """One read of at most ``size`` bytes: ``(data, "")``, or ``(b"", end)`` when the
    connection ended, ``end`` being ``"eof"`` (FIN), ``"rst"`` or ``"timeout"``. A consumer in
    the middle of a message waits ``incomplete_message_timeout`` for the next byte; at a
    boundary, the idle timeout."""
    sock.settimeout(target.incomplete_message_timeout_s if in_message else target.idle_timeout_s)
    try:
        data = sock.recv(size)
    except TimeoutError:
        return b"", "timeout"
    except ConnectionResetError:
        return b"", "rst"
    return data, "" if data else "eof"


def transport_error(end: str, in_message: bool) -> CodecError | None:
    """The error a transport end means: none for a FIN at a message boundary."""
    if end == "rst":
        return CodecError(ErrorCode.CONNECTION_RESET, "connection reset")
    if end == "timeout":
        return CodecError(ErrorCode.IDLE_TIMEOUT, "no byte in time", at_boundary=not in_message)
    if end == "eof" and in_message:
        return CodecError(ErrorCode.FRAME_TRUNCATED, "EOF inside a message")
    return None


@dataclass(slots=True)
class Tally:
    """What the consumer handed on, and how each of its connections ended."""

    accepted: list[Accepted] = field(default_factory=list)
    connections: list[ConnectionSummary] = field(default_factory=list)
    reads: int = 0
    bytes_received: int = 0

    @property
    def connection(self) -> int:
        """The number (1-based) of the connection being read."""
        return len(self.connections) + 1

    def received(self, data: bytes) -> None:
        self.reads += 1
        self.bytes_received += len(data)

    def accept(self, data: bytes) -> None:
        """One message handed on to the application."""
        self.accepted.append(Accepted.of(data, self.connection))

    def close(self, end: str, framing_verdict: str, error_code: str | None = None) -> None:
        """The current connection ended (``end`` as in ``ConnectionSummary``)."""
        self.connections.append(
            ConnectionSummary(end, framing_verdict, error_code, self.reads, self.bytes_received)
        )
        self.reads = self.bytes_received = 0

    def report(
        self,
        verdict: str,
        complete: bool,
        error_code: str | None = None,
        detail: str = "",
        recorded: Recorded | None = None,
    ) -> ConsumerReport:
        last = self.connections[-1].framing_verdict if self.connections else None
        # Shared, correct behaviour (not a bug under test): an envelope or token stream that is
        # refused hands nothing on, as the reference consumer does.
        refused = os.environ.get("TEARLINE_PAYLOAD") in ("envelope", "tokens") and not (
            complete or verdict == "PARTIAL_SAFE_BOUNDARY"
        )
        return ConsumerReport(
            verdict=verdict,
            complete=complete,
            error_code=error_code,
            framing_verdict=last,
            accepted=() if refused else tuple(self.accepted),
            connections=tuple(self.connections),
            reads=sum(c.reads for c in self.connections),
            recorded=recorded or Recorded(),
            detail=detail,
        )


def emit(report: ConsumerReport) -> None:
    """Print the report as the last line of standard output (the contract)."""
    print(to_json(report), flush=True)
