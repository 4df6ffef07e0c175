"""The five framings, by the names scenarios use.

Each framing module exposes ``client(options) -> ClientCodec`` and
``server(options) -> ServerCodec``; see ``base.py`` for the contract.
"""

from __future__ import annotations

from types import ModuleType

from reference_impl.framing import grpc, length_prefixed, ndjson, sse, websocket
from reference_impl.framing.base import ClientCodec, ServerCodec
from reference_impl.framing.options import DEFAULT_MAX_MESSAGE_BYTES, FramingOptions

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "FRAMING_NAMES",
    "FramingOptions",
    "make_client",
    "make_server",
]

_MODULES: dict[str, ModuleType] = {
    "length-prefixed": length_prefixed,
    "ndjson": ndjson,
    "sse": sse,
    "websocket": websocket,
    "grpc": grpc,
}

FRAMING_NAMES: tuple[str, ...] = tuple(_MODULES)


def make_client(name: str, options: FramingOptions | None = None) -> ClientCodec:
    """A fresh consumer-side codec for framing ``name``."""
    client: ClientCodec = _MODULES[name].client(options or FramingOptions())
    return client


def make_server(name: str, options: FramingOptions | None = None) -> ServerCodec:
    """A fresh producer-side codec for framing ``name``."""
    server: ServerCodec = _MODULES[name].server(options or FramingOptions())
    return server
