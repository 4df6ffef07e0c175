"""Sans-IO helpers shared by the codec tests: produce a framing's wire bytes, then decode them
under any split, without sockets; and the example budget of their property tests."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TypeVar

from hypothesis import settings

from reference_impl.errors import CodecError
from reference_impl.events import Event, Message
from reference_impl.framing import FramingOptions, make_client, make_server
from reference_impl.framing.base import ClientCodec, ServerCodec
from reference_impl.link.spec import pump

S = TypeVar("S", bound=ServerCodec)


def produce_wire(
    framing: str,
    messages: Sequence[Message],
    *,
    end: bool = True,
    options: FramingOptions | None = None,
) -> tuple[bytes, bytes]:
    """Run a client and a server codec against each other in memory.

    Returns ``(request, wire)``: what the client sent first, and every byte the server sent.
    """
    options = options or FramingOptions()
    client, server = make_client(framing, options), make_server(framing, options)
    request = client.initiate()
    server.receive_data(request)
    wire = bytearray()
    pump(client, server, wire)
    assert server.ready
    for message in messages:
        server.send_message(message)
        pump(client, server, wire)
    if end:
        server.end()
        pump(client, server, wire)
    return request, bytes(wire)


def decode(
    framing: str,
    pieces: Iterable[bytes],
    *,
    eof: bool = True,
    options: FramingOptions | None = None,
) -> list[Event]:
    """Decode server bytes delivered as ``pieces`` with a fresh client; EOF at the end if asked."""
    client = make_client(framing, options or FramingOptions())
    client.initiate()
    events: list[Event] = []
    for piece in pieces:
        events += client.receive_data(piece)
    if eof:
        events += client.receive_eof()
    return events


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """Split ``data`` at the given offsets (any order, duplicates allowed)."""
    points = sorted({0, len(data), *(c for c in cuts if 0 <= c <= len(data))})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def decode_error(framing: str, pieces: Iterable[bytes], **kw: object) -> CodecError:
    """Decode and return the CodecError raised; fail the test if none is."""
    try:
        decode(framing, pieces, **kw)  # type: ignore[arg-type]
    except CodecError as err:
        return err
    raise AssertionError("expected a CodecError")


def examples(ci_examples: int) -> settings:
    """``@settings`` for a property test that runs ``ci_examples`` examples under the ``ci``
    profile (``tests/conftest.py``), scaled by the loaded profile's ``max_examples`` against
    ci's (x20 under ``fuzz``). Everything else is inherited from the loaded profile; a plain
    ``@settings(max_examples=N)`` would pin N under every profile."""
    loaded = settings()  # a fresh settings object inherits the loaded profile's values
    scale = loaded.max_examples / settings.get_profile("ci").max_examples
    return settings(max_examples=max(1, round(ci_examples * scale)))


def chunk(payload: bytes) -> bytes:
    """``payload`` as one HTTP/1.1 chunk."""
    return b"%x\r\n" % len(payload) + payload + b"\r\n"


def ready(server: S, client: ClientCodec) -> S:
    """``server`` once it has read ``client``'s request (and its answer head was taken)."""
    server.receive_data(client.initiate())
    server.data_to_send()
    return server
