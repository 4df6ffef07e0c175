"""Loopback plumbing for the harness tests: a tiny producer, the real proxy, a recording reader.

Everything listens on 127.0.0.1 with ports from the OS. ``Reads`` keeps every ``receive_some``
result separately, so a test can assert where the consumer's read boundaries fell, not only
which bytes arrived.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import trio

from harness.evidence.timeline import Timeline
from harness.faults.config import Fault
from harness.faults.items import Direction
from harness.faults.stage import Locator
from harness.link.live import LinkTraits, LiveStream
from harness.link.locator import PreparedLocator
from harness.link.prepared import PreparedLink, prepare
from harness.link.reference import prepared_link
from harness.proxy.server import Proxy, ProxyConfig
from harness.scenario import Case, expand, load_text
from reference_impl.link import spec as ref_link
from reference_impl.payload import messages

LOOPBACK = "127.0.0.1"
PROGRAMS = Path(__file__).parent / "programs"
PYTHON = sys.executable

Handler = Callable[[trio.SocketStream], Awaitable[None]]


@dataclass
class Reads:
    """What one consumer connection got: each read, and how the stream ended."""

    parts: list[bytes] = field(default_factory=list)
    end: str = ""  # "eof" | "rst"

    @property
    def data(self) -> bytes:
        return b"".join(self.parts)


async def read_all(stream: trio.SocketStream, max_bytes: int = 1 << 20) -> Reads:
    """Read until EOF ("eof") or a reset ("rst"), keeping each read apart."""
    reads = Reads()
    try:
        while data := await stream.receive_some(max_bytes):
            reads.parts.append(bytes(data))
    except trio.BrokenResourceError:
        reads.end = "rst"
    else:
        reads.end = "eof"
    return reads


async def read_exactly(stream: trio.SocketStream, size: int) -> bytes:
    """``size`` bytes (however many reads that takes); fails the test at an early end."""
    data = b""
    while len(data) < size:
        more = await stream.receive_some(size - len(data))
        assert more, f"stream ended after {len(data)} of {size} bytes"
        data += more
    return data


async def serve(nursery: trio.Nursery, handler: Handler) -> int:
    """Serve ``handler`` on a loopback port from the OS; returns the port."""
    listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host=LOOPBACK))
    port: int = listeners[0].socket.getsockname()[1]
    return port


def sender(data: bytes, *, then: str = "wait") -> Handler:
    """A producer that writes ``data`` in one ``send_all``, then either waits for the proxy to
    end the connection (``then="wait"``) or closes (``"fin"``)."""

    async def handler(stream: trio.SocketStream) -> None:
        await stream.send_all(data)
        if then == "fin":
            await stream.aclose()
            return
        await read_all(stream)

    return handler


async def start_proxy(
    nursery: trio.Nursery,
    upstream_port: int,
    faults: Sequence[Fault] = (),
    locator: Locator | None = None,
    seed: int = 0,
) -> tuple[Proxy, int]:
    """The real proxy in front of ``upstream_port``; downstream faults placed with ``locator``."""

    def locators(direction: Direction, number: int) -> Locator:
        if direction == "downstream" and locator is not None:
            return locator
        return LiveStream(LinkTraits())  # a raw stream: offsets, matches, characters, times

    config = ProxyConfig(
        (LOOPBACK, upstream_port),
        tuple(faults),
        locators=locators,
        seed=seed,
    )
    proxy = Proxy(config, Timeline())
    port: int = await nursery.start(proxy.serve, LOOPBACK, 0)
    return proxy, port


def fault_facts(timeline: Timeline) -> list[tuple[int, str, str, int | None, str]]:
    """The fault records without their times: (connection, direction, name, offset, detail)."""
    return [(f.connection, f.direction, f.name, f.offset, f.detail) for f in timeline.faults]


def end_facts(timeline: Timeline) -> list[tuple[int, str, str, int, int]]:
    """The leg ends without their times: (connection, direction, how, written, read)."""
    return [(e.connection, e.direction, e.how, e.written, e.read) for e in timeline.ends]


def segment_facts(timeline: Timeline, direction: str = "downstream") -> list[tuple[int, int]]:
    """(offset, length) of every segment written on ``direction``."""
    return [(s.offset, s.length) for s in timeline.segments if s.direction == direction]


# ---- a known expected wire: length-prefixed messages, for frame positions


TEXTS = ("first message", "second: h\u00e9llo \u20ac", "third", "fourth and last")


def prefixed_link() -> tuple[PreparedLink, PreparedLocator]:
    """Four length-prefixed messages (``TEXTS``): the prepared link and its locator."""
    spec = ref_link.LinkSpec(
        "length-prefixed", "messages", messages=messages.MessagesSpec(texts=TEXTS)
    )
    prepared = prepare(spec)
    return prepared, PreparedLocator(prepared)


def one_case(text: str) -> Case:
    """The single case of a one-scenario YAML text."""
    (scenario,) = load_text(text, "harness-test.yaml")
    (case,) = expand(scenario, prepared_link)
    return case
