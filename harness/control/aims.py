"""tearline's additions to a toxic: aimed at one connection, at one client, or from a
position of its stream on. Pure.

A toxic body may carry, beside Toxiproxy's ``name``, ``type``, ``stream``, ``toxicity`` and
``attributes`` (Toxiproxy ignores these keys, so a body written for tearline still works
there, minus the aim):

- ``connection``: N, the toxic applies to the Nth connection the proxy accepts after it was
  enabled (0, the default: every connection);
- ``client``: an IP address (``127.0.0.1``) or an address and port (``127.0.0.1:50123``,
  ``[::1]:50123``): only connections from that client;
- ``from``: a position of the toxic's own stream, as a scenario file writes one (``{"match":
  "ERROR"}``, ``{"offset": 1024}``, ``{"frame": 3}`` with a framing, ``{"after_ms": 500}``):
  the toxic does nothing on a connection until its stream gets there, then acts on every
  byte from there on.

They are set when the toxic is created (an update changes attributes and toxicity only) and
show in the toxic's JSON only when given.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from harness.control.addresses import AddressError, split_host_port
from harness.control.gojson import Num, Obj, Value
from harness.control.toxicity import Aimed, ClientTarget
from harness.control.toxics import plain_value
from harness.errors import FieldError
from harness.faults.config import Fault
from harness.faults.position import Position

#: the largest connection number a toxic may be aimed at
MAX_CONNECTION = (1 << 31) - 1
KEYS = ("connection", "client", "from")


@dataclass(frozen=True, slots=True)
class Aims:
    connection: int = 0
    client: ClientTarget | None = None
    start: Position | None = None
    #: ``from`` as it was given (shown back as it was written)
    start_shown: Any = None

    def __bool__(self) -> bool:
        return bool(self.connection or self.client or self.start)

    def wrap(self, fault: Fault) -> Fault:
        return Aimed(fault, self.connection, self.client, self.start) if self else fault

    def shown(self) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        if self.connection:
            shown["connection"] = self.connection
        if self.client:
            shown["client"] = self.client.shown()
        if self.start:
            shown["from"] = self.start_shown
        return shown


NO_AIMS = Aims()


def member(value: Value, key: str) -> Value | None:
    """The member ``key`` of an object as Go finds it: the exact key, else any spelling of it
    (the last one written wins)."""
    if not isinstance(value, Obj):
        return None
    exact = [v for k, v in value.items if k == key]
    found = exact or [v for k, v in value.items if k.casefold() == key]
    return found[-1] if found else None


def read_aims(value: Value, framing: str) -> Aims:
    """The aims of a toxic body; ``FieldError`` with the key (``client``, ``from.match``)."""
    connection = _connection(member(value, "connection"))
    raw_client = member(value, "client")
    client = None if raw_client is None else parse_client(raw_client)
    raw_start = member(value, "from")
    start = None if raw_start is None else _position(raw_start, framing)
    return Aims(connection, client, start, None if start is None else plain_value(raw_start))


def _connection(raw: Value | None) -> int:
    if raw is None:
        return 0
    if not isinstance(raw, Num) or not raw.text.isdigit():
        raise FieldError(f"must be a whole number >= 0 (got {_text(raw)})", path=("connection",))
    number = int(raw.text)
    if number > MAX_CONNECTION:
        raise FieldError(f"must be <= {MAX_CONNECTION} (got {number})", path=("connection",))
    return number


def parse_client(raw: Value) -> ClientTarget:
    """``127.0.0.1``, ``::1``, ``127.0.0.1:50123`` or ``[::1]:50123`` (``localhost`` is
    127.0.0.1); ``FieldError`` otherwise."""
    if not isinstance(raw, str):
        raise FieldError(
            f"must be an IP address or address:port (got {_text(raw)})", path=("client",)
        )
    text = "127.0.0.1" + raw[len("localhost") :] if raw.startswith("localhost") else raw
    host, port = text, None
    try:
        ipaddress.ip_address(text)
    except ValueError:
        try:
            host, port_text = split_host_port(text)
            port = int(port_text) if port_text.isdigit() else -1
        except AddressError:
            port = -1
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        port = -1
    if port is not None and not 0 < port <= 65535:
        message = f"must be an IP address or address:port (got {raw!r})"
        raise FieldError(message, path=("client",))
    return ClientTarget(host, port)


def _position(raw: Value, framing: str) -> Position:
    """``from`` checked as a scenario file's position is (the loader's own messages)."""
    # Imported here: only toxics with a ``from`` need the scenario loader.
    from harness.config.issues import Issues  # noqa: PLC0415
    from harness.config.nodes import parse  # noqa: PLC0415
    from harness.config.validate import INVALID, Validator  # noqa: PLC0415
    from harness.faults import FAULTS  # noqa: PLC0415
    from harness.faults.registry import rules_for  # noqa: PLC0415

    issues = Issues("<api>")
    node = parse(json.dumps(plain_value(raw)), issues)
    value: Any = INVALID
    if node is not None:
        value = Validator(issues, rules_for(FAULTS)).value(node, Position, (), 1)
    if issues.items or not isinstance(value, Position):
        first = issues.items[0] if issues.items else None
        message = first.message if first else "invalid"
        path = ("from", first.key_path) if first and first.key_path else ("from",)
        raise FieldError(message, path=path)
    if value.anchor == "frame" and not framing:
        message = "frame positions need the link's framing; give the proxy a framing"
        raise FieldError(message, path=("from", "frame"))
    return value


def _text(value: Value) -> str:
    return json.dumps(plain_value(value))
