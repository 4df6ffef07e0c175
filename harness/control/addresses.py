"""Listen and upstream addresses, read as Go's ``net`` package reads them, with its error texts;
and the loopback rule. Pure (no name is looked up except ``localhost`` and service names).

Toxiproxy's clients show the texts of Go's errors (``listen tcp: address bogus: missing port in
address``), so ``parse_listen`` reproduces them. A listen address that is not on the loopback
interface is refused unless the server was started with ``--allow-remote``: a fault proxy
passes any bytes to its upstream and its control API has no authentication, so neither should
be reachable from other machines by accident.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

LOCALHOST = "localhost"


class AddressError(ValueError):
    """An address Go would refuse; ``text`` is Go's error text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass(frozen=True, slots=True)
class ListenAddress:
    """Where to bind: a numeric host (``""`` for every interface) and a port (0: any)."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return bool(self.host) and ipaddress.ip_address(self.host).is_loopback

    @property
    def shown(self) -> str:
        """As Go writes it: ``127.0.0.1:8474``, ``[::1]:8474``."""
        return join_host_port(self.host or "::", self.port)


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_host_port(text: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort``; ``AddressError`` with its text."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise AddressError(f"address {text}: missing ']' in address")
        host, rest = text[1:end], text[end + 1 :]
        if not rest.startswith(":"):
            raise AddressError(f"address {text}: missing port in address")
        return host, rest[1:]
    colon = text.rfind(":")
    if colon < 0:
        raise AddressError(f"address {text}: missing port in address")
    host, port = text[:colon], text[colon + 1 :]
    if ":" in host:
        raise AddressError(f"address {text}: too many colons in address")
    return host, port


def _port(text: str) -> int:
    if text == "":
        return 0
    if text.isdigit():
        number = int(text)
        if number > 65535:
            raise AddressError(f"address {text}: invalid port")
        return number
    try:
        return socket.getservbyname(text, "tcp")
    except OSError:
        raise AddressError(f"address tcp/{text}: unknown port") from None


def resolve_listen(text: str) -> ListenAddress:
    """``text`` as Go's ``net.ResolveTCPAddr("tcp", text)`` reads it; ``AddressError`` with
    its text (``address bad: missing port in address``). ``""`` is every interface and a port
    from the OS, as in Go."""
    if text == "":
        return ListenAddress("", 0)
    host, port_text = split_host_port(text)
    port = _port(port_text)
    if host == LOCALHOST:
        host = "127.0.0.1"  # Go listens on the first address of localhost: IPv4
    elif host:
        try:
            host = str(ipaddress.ip_address(host))
        except ValueError:
            raise AddressError(f"lookup {host}: no such host") from None
    return ListenAddress(host, port)


def parse_listen(text: str) -> ListenAddress:
    """For a listen that fails: ``AddressError`` with ``net.Listen``'s text (``listen tcp:
    address 99999: invalid port``)."""
    try:
        return resolve_listen(text)
    except AddressError as err:
        raise AddressError(f"listen tcp: {err.text}") from None


def bind_error(address: ListenAddress, err: OSError) -> str:
    """Go's text for a failed bind (``listen tcp 127.0.0.1:8474: bind: address already in
    use``), from the errno of ``err``."""
    words = (err.strerror or str(err)).lower()
    return f"listen tcp {address.shown}: bind: {words}"


def refused_remote(address: ListenAddress) -> str:
    return (
        f"listen tcp {address.shown}: refused: not a loopback address "
        "(start tearline with --allow-remote to listen on other interfaces)"
    )


def parse_upstream(text: str) -> tuple[str, int]:
    """An upstream ``host:port`` to dial (any host: a name is looked up when dialling);
    ``AddressError`` with Go's ``dial tcp`` text."""
    try:
        host, port_text = split_host_port(text)
        if not port_text:
            raise AddressError(f"address {text}: missing port in address")
        return host or "127.0.0.1", _port(port_text)
    except AddressError as err:
        raise AddressError(f"dial tcp: {err.text}") from None
