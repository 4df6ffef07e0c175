"""TLS on the proxy's two sides: terminated toward the consumer, originated toward the upstream.

The proxy's legs read and write plaintext either way (``sockio.py``), so every fault, frame position
and watcher works through TLS as without it. Toward the consumer the proxy serves a certificate for
the names it listens on (``harness/running/certificates.py`` makes one for a run); toward the
upstream it verifies the server's certificate against the system's CAs, or ``ca_file``, unless
``insecure`` says not to. SNI is the upstream's host name (none for an IP address, as TLS wants).
ALPN is carried through: the protocol the consumer chose is what the proxy offers upstream; a
consumer that chose none (plain TCP, or no ALPN) leaves the framing's offer (``alpn_offer``: ``h2``
for gRPC, ``http/1.1`` otherwise).

Each handshake is bounded by ``handshake_timeout_s`` and fails as ``TlsError``, one line
naming the cause (an upstream that does not speak TLS, a certificate for another name, an
unknown CA): the proxy records it, as it records an unreachable upstream.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass

import trio

from reference_impl.framing import alpn_protocols
from reference_impl.peers.tls_stream import TlsStream

HANDSHAKE_TIMEOUT_S = 5.0
H2, HTTP11 = "h2", "http/1.1"


def alpn_offer(framing: str | None) -> tuple[str, ...]:
    """What a client of ``framing`` offers (``reference_impl.framing.alpn_protocols``)."""
    return alpn_protocols(framing)


def alpn_accept(framing: str | None) -> tuple[str, ...]:
    """What a terminating side accepts from a consumer: either, the framing's own first."""
    own = alpn_offer(framing)
    return own + tuple(p for p in (H2, HTTP11) if p not in own)


@dataclass(frozen=True, slots=True)
class Originate:
    """TLS toward the upstream."""

    #: SNI and the name its certificate must carry: the upstream's host
    server_hostname: str
    #: a PEM file of the CAs to trust instead of the system's (a private CA)
    ca_file: str | None = None
    #: do not verify the certificate at all (an explicit choice, never a fallback)
    insecure: bool = False


@dataclass(frozen=True, slots=True)
class ProxyTls:
    """TLS on either side of the proxy (a side left None is plain TCP)."""

    #: toward the consumer: the server context (certificate, accepted ALPN protocols)
    terminate: ssl.SSLContext | None = None
    #: toward the upstream
    originate: Originate | None = None
    #: offered upstream when the consumer chose no protocol
    alpn: tuple[str, ...] = (HTTP11,)
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S


class TlsError(Exception):
    """A handshake that failed, or TLS settings that cannot be used: one line, the cause."""


@functools.lru_cache(maxsize=64)
def client_context(ca_file: str | None, insecure: bool, alpn: tuple[str, ...]) -> ssl.SSLContext:
    """The context toward an upstream (cached: loading CAs costs milliseconds)."""
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ValueError) as err:  # ssl.SSLError is an OSError: a file without a CA
        reason = getattr(err, "strerror", None) or getattr(err, "reason", None) or err
        raise TlsError(f"cannot use CA file {ca_file}: {reason}") from err
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


async def _handshake(stream: TlsStream, timeout_s: float) -> TlsStream:
    with trio.move_on_after(timeout_s):
        try:
            await stream.do_handshake()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as err:
            raise TlsError(str(err) or "the connection broke") from err
        return stream
    raise TlsError(f"no TLS handshake within {timeout_s:g} s (does the peer speak TLS?)")


async def terminate(
    transport: trio.SocketStream, context: ssl.SSLContext, timeout_s: float
) -> TlsStream:
    """The consumer's connection, its handshake done; ``TlsError`` if it failed."""
    return await _handshake(TlsStream(transport, context, server_side=True), timeout_s)


async def originate(
    transport: trio.SocketStream, side: Originate, alpn: tuple[str, ...], timeout_s: float
) -> TlsStream:
    """The upstream connection, its handshake done; ``TlsError`` if it failed."""
    context = client_context(side.ca_file, side.insecure, alpn)
    stream = TlsStream(transport, context, server_side=False, server_hostname=side.server_hostname)
    stream = await _handshake(stream, timeout_s)
    chosen = stream.selected_alpn_protocol()
    if alpn == (H2,) and chosen != H2:
        # gRPC over TLS is HTTP/2 chosen by ALPN: a server that chose otherwise speaks no gRPC,
        # and saying so beats the garbled HTTP/2 error its first bytes would give
        await stream.aclose()
        raise TlsError(
            f"the upstream chose {'ALPN ' + repr(chosen) if chosen else 'no ALPN protocol'} "
            "where h2 was offered: it does not speak HTTP/2 (gRPC) over TLS"
        )
    return stream
