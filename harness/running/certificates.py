"""The run's test certificate authority, and the TLS contexts made from it.

``tearline run --tls`` (a link with ``tls: true``) needs certificates nobody has to install: a
CA made for the run (``trustme``, the only module that imports it), a certificate from it for
the names tearline listens on (``LOOPBACK_NAMES``), used by the proxy toward the consumer and by
the reference producer, and the CA's PEM file in a temporary folder of the run, which consumer
programs are handed (``{ca_file}``, ``SSL_CERT_FILE``, ...: ``harness/running/external.py``).

One authority per process, made on first use. ``tearline run`` makes it before it forks its
workers, so they share the parent's (one CA, one file, for the whole run); the folder goes when
the process that made it exits. Tests and benchmarks make others (``new_authority``): a CA
nobody trusts, a certificate for another name.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trustme

#: the names (and addresses) the proxy and the reference producer listen on
LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")
CA_FILE_NAME = "tearline-run-ca.pem"


@dataclass(frozen=True, slots=True)
class Authority:
    """A test CA, a server certificate from it for ``LOOPBACK_NAMES``, and the CA's file."""

    ca: trustme.CA
    leaf: trustme.LeafCert
    #: the CA certificate (PEM): what a consumer must trust
    ca_file: Path

    def server_context(self, alpn: Sequence[str] = ()) -> ssl.SSLContext:
        """A server context with the loopback certificate, choosing among ``alpn`` (in that
        order of preference) what the client offers."""
        return _server_context(self, tuple(alpn))

    def client_context(self, alpn: Sequence[str] = ()) -> ssl.SSLContext:
        """A client context that trusts this CA only (hostname checked), offering ``alpn``."""
        return _client_context(self, tuple(alpn))

    def write_identity(self, path: Path) -> None:
        """The certificate's private key and chain in one PEM file (``load_cert_chain``), for
        a server in another process."""
        self.leaf.private_key_and_cert_chain_pem.write_to_path(str(path))


def new_authority(
    folder: Path, names: Sequence[str] = LOOPBACK_NAMES, *, organization: str = "tearline CA"
) -> Authority:
    """A fresh CA, a server certificate from it for ``names``, the CA's file in ``folder``."""
    ca = trustme.CA(organization_name=organization)
    leaf = ca.issue_cert(*names)
    ca_file = folder / CA_FILE_NAME
    ca.cert_pem.write_to_path(str(ca_file))
    return Authority(ca, leaf, ca_file)


@functools.cache
def run_authority() -> Authority:
    """This process's authority (and its CA file), made on first use."""
    folder = Path(tempfile.mkdtemp(prefix="tearline-tls-"))
    owner = os.getpid()

    def remove() -> None:
        # a forked worker inherits the handler: only the process that made the folder removes it
        if os.getpid() == owner:
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    return new_authority(folder, organization="tearline run CA")


# Contexts are cached: building one loads keys and certificates, and a case opens several.
@functools.cache
def _server_context(authority: Authority, alpn: tuple[str, ...]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.leaf.configure_cert(context)
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


@functools.cache
def _client_context(authority: Authority, alpn: tuple[str, ...]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(authority.ca_file))
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context
