"""A case's TLS, from its link: what the proxy, the reference producer and consumer get.

``link.tls`` puts TLS between the consumer and the proxy (the proxy's certificate from the run's
test CA, ``harness/running/certificates.py``) and, when the producer is the reference one, between
the proxy and the producer too, the proxy verifying the producer's certificate against the same CA.
An ``https://`` upstream has the proxy originate TLS to it whatever ``link.tls`` says, verifying
against the system's CAs, ``upstream_ca``, or not at all (``upstream_insecure``). ALPN follows the
framing (``harness/proxy/tlsio.py``). The CA is made only when a case asks for TLS.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from harness.proxy.tlsio import Originate, ProxyTls, alpn_accept, alpn_offer
from harness.scenario import Link
from harness.scenario.model import split_upstream
from reference_impl.defaults import LOOPBACK

if TYPE_CHECKING:
    from harness.running.certificates import Authority


def proxy_tls(link: Link) -> ProxyTls | None:
    """The proxy's TLS for this link (None: plain TCP on both sides)."""
    producer = link.producer
    https = producer.upstream is not None and split_upstream(producer.upstream)[0]
    if not link.tls and not https:
        return None
    originate = None
    if producer.upstream is not None and https:
        host = split_upstream(producer.upstream)[1]
        originate = Originate(host, producer.upstream_ca, producer.upstream_insecure)
    elif producer.upstream is None and link.tls:
        # the reference producer listens on loopback: the name the proxy checks
        originate = Originate(LOOPBACK, str(_authority().ca_file))
    terminate = _authority().server_context(alpn_accept(link.framing)) if link.tls else None
    return ProxyTls(terminate, originate, alpn_offer(link.framing))


def producer_tls(link: Link) -> ssl.SSLContext | None:
    """The reference producer's server context (None: it serves plain TCP)."""
    return _authority().server_context(alpn_offer(link.framing)) if link.tls else None


def consumer_tls(link: Link) -> ssl.SSLContext | None:
    """The reference consumer's client context, trusting the run's CA (None: plain TCP)."""
    return _authority().client_context(alpn_offer(link.framing)) if link.tls else None


def ca_file(link: Link) -> str:
    """The run CA's file for a consumer program ('' when the consumer's side is plain)."""
    return str(_authority().ca_file) if link.tls else ""


def _authority() -> Authority:
    from harness.running.certificates import run_authority  # noqa: PLC0415 - trustme only when TLS is asked for

    return run_authority()
