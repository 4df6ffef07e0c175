"""The six framings, by the names scenarios use, as a table of modules imported on first use.

Each framing module exposes ``client(options) -> ClientCodec`` and
``server(options) -> ServerCodec``; see ``base.py`` for the contract. The table is lazy so that
naming a framing (the scenario model, the reports) does not load h11, wsproto and h2.
"""

from __future__ import annotations

import importlib
from enum import StrEnum
from typing import TYPE_CHECKING

from reference_impl.framing.options import DEFAULT_MAX_MESSAGE_BYTES, FramingOptions

if TYPE_CHECKING:
    from reference_impl.framing.base import ClientCodec, ServerCodec

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "FRAMING_NAMES",
    "FramingName",
    "FramingOptions",
    "alpn_protocols",
    "make_client",
    "make_monitor",
    "make_server",
]


class FramingName(StrEnum):
    LENGTH_PREFIXED = "length-prefixed"
    NDJSON = "ndjson"
    SSE = "sse"
    WEBSOCKET = "websocket"
    GRPC = "grpc"
    NDJSON_HTTP = "ndjson-http"


FRAMING_NAMES: tuple[str, ...] = tuple(FramingName)


def alpn_protocols(framing: str | None) -> tuple[str, ...]:
    """What a TLS client of ``framing`` offers: gRPC is HTTP/2; SSE, NDJSON over HTTP and
    WebSocket are HTTP/1.1 (and a framed TCP stream's server ignores ALPN)."""
    return ("h2",) if framing == FramingName.GRPC else ("http/1.1",)


_MODULES: dict[str, str] = {
    FramingName.LENGTH_PREFIXED: "reference_impl.framing.length_prefixed",
    FramingName.NDJSON: "reference_impl.framing.ndjson",
    FramingName.SSE: "reference_impl.framing.sse",
    FramingName.WEBSOCKET: "reference_impl.framing.websocket",
    FramingName.GRPC: "reference_impl.framing.grpc",
    FramingName.NDJSON_HTTP: "reference_impl.framing.ndjson_http",
}


def make_client(name: str, options: FramingOptions | None = None) -> ClientCodec:
    """A fresh consumer-side codec for framing ``name``."""
    client: ClientCodec = importlib.import_module(_MODULES[name]).client(
        options or FramingOptions()
    )
    return client


def make_server(name: str, options: FramingOptions | None = None) -> ServerCodec:
    """A fresh producer-side codec for framing ``name``."""
    server: ServerCodec = importlib.import_module(_MODULES[name]).server(
        options or FramingOptions()
    )
    return server


def make_monitor(name: str, options: FramingOptions | None = None) -> ClientCodec:
    """A consumer-side codec that watches a stream another client asked for (a proxy's view):
    it decodes what the producer sends, its own request is not sent and what it would answer
    is not either. A framing whose handshake answer is made for one client only (WebSocket's
    accept key) has a ``monitor`` of its own."""
    module = importlib.import_module(_MODULES[name])
    factory = getattr(module, "monitor", module.client)
    codec: ClientCodec = factory(options or FramingOptions())
    codec.initiate()
    return codec
