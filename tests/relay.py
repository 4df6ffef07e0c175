"""A tiny test-only trio TCP relay that can cut the producer->consumer direction of a stream.

The relay listens on a port of its own (0: the OS picks one), opens a connection to the producer
for every consumer that connects, and copies bytes both ways. Connection ``i`` (0-based) follows
``plans[i]``; a connection without a plan (or with ``None``) is relayed cleanly, FIN for FIN.
A ``Cut`` first forwards exactly ``after`` producer->consumer bytes, in one write, so the consumer
reads them as one piece and the cut lands at an exact wire offset; then:

- ``"fin"``: half-close towards the consumer (``send_eof``) and drop the producer leg. The
  consumer's bytes are still read until it closes: closing with unread data would turn the FIN
  into an RST (failure catalogue, case 60).
- ``"rst"``: ``SO_LINGER (1, 0)`` and close: the consumer reads the queued bytes, then a reset.
- ``"stall"``: forward nothing more, keep both legs open until the consumer gives up.
- ``"pause"``: stop reading the producer until every task of the test is blocked (the consumer
  has read the first part and is waiting; a producer with more to say is stuck on a full
  socket), call ``on_pause``, then relay the rest cleanly. This makes "the consumer's read ended
  mid-message" and "the producer felt backpressure" deterministic without sleeping.

``forwarded[i]`` holds every byte the relay wrote to consumer ``i``. ``run_link`` wires the
reference producer, a relay and the reference consumer together for one test.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import trio
import trio.testing

from reference_impl.link.consumer_config import ConsumerConfig, ConsumerPolicy
from reference_impl.link.spec import LinkSpec, iter_payload
from reference_impl.payload import envelope, messages, tokens
from reference_impl.peers.consumer import run_consumer
from reference_impl.peers.producer import ConnectionLog, Producer, ProducerConfig, ProducerLog
from reference_impl.report import ConsumerReport, Tally

READ_BYTES = 65536
#: ``struct linger {l_onoff=1, l_linger=0}``: close() then resets the connection instead of a FIN
_LINGER_ZERO = struct.pack("ii", 1, 0)
CutKind = Literal["fin", "rst", "stall", "pause"]


@dataclass(frozen=True, slots=True)
class Cut:
    """Forward ``after`` producer->consumer bytes, then do ``how`` (see the module docstring)."""

    after: int
    how: CutKind


class _Leg:
    """The producer leg: writes stop quietly once the relay has dropped it."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.open = True

    async def send(self, data: bytes) -> None:
        if not self.open:
            return
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.open = False

    async def drop(self) -> None:
        self.open = False
        await self.stream.aclose()


class Relay:
    """Relays consumers to the producer on ``upstream_port``; see the module docstring."""

    def __init__(
        self,
        upstream_port: int,
        plans: Sequence[Cut | None] = (),
        *,
        upstream_rcvbuf: int | None = None,
        on_pause: Callable[[], None] | None = None,
    ) -> None:
        self.upstream_port = upstream_port
        self.plans = tuple(plans)
        #: a small receive buffer on the producer leg makes backpressure reach the producer soon
        self.upstream_rcvbuf = upstream_rcvbuf
        self.on_pause = on_pause
        self.forwarded: list[bytearray] = []

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on an OS-chosen loopback port and report it once ready."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port: int = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(port)

    async def _connect(self) -> trio.SocketStream:
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
        if self.upstream_rcvbuf is not None:  # before connect, so the window is sized by it
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.upstream_rcvbuf)
        await sock.connect(("127.0.0.1", self.upstream_port))
        return trio.SocketStream(sock)

    async def _handle(self, consumer: trio.SocketStream) -> None:
        index = len(self.forwarded)
        self.forwarded.append(bytearray())
        plan = self.plans[index] if index < len(self.plans) else None
        producer = _Leg(await self._connect())
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump_up, consumer, producer)
                await self._pump_down(producer, consumer, plan, self.forwarded[index])
        finally:
            await producer.drop()
            await consumer.aclose()

    async def _pump_down(
        self, producer: _Leg, consumer: trio.SocketStream, plan: Cut | None, out: bytearray
    ) -> None:
        """Producer -> consumer, cut as planned; returns once this direction is done."""
        if plan is not None:
            head, rest = await _read_exactly(producer.stream, plan.after)
            await _write(consumer, head, out)
            if plan.how != "pause":
                await _cut(plan.how, producer, consumer)
                return
            await trio.testing.wait_all_tasks_blocked()
            if self.on_pause is not None:
                self.on_pause()
            await _write(consumer, rest, out)
        while data := await _receive(producer.stream):
            await _write(consumer, data, out)
        await _send_eof(consumer)


async def _receive(stream: trio.SocketStream) -> bytes:
    """Bytes from a leg; ``b""`` for its end, however it ended."""
    try:
        return await stream.receive_some(READ_BYTES)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return b""


async def _read_exactly(stream: trio.SocketStream, count: int) -> tuple[bytes, bytes]:
    """The first ``count`` bytes (fewer if the leg ends first) and what came with them."""
    buffer = bytearray()
    while len(buffer) < count and (data := await _receive(stream)):
        buffer += data
    return bytes(buffer[:count]), bytes(buffer[count:])


async def _write(consumer: trio.SocketStream, data: bytes, out: bytearray) -> None:
    if not data:
        return
    try:
        await consumer.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return
    out += data


async def _send_eof(stream: trio.SocketStream) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_eof()


async def _cut(how: CutKind, producer: _Leg, consumer: trio.SocketStream) -> None:
    if how == "fin":
        await _send_eof(consumer)
        await producer.drop()
    elif how == "rst":
        consumer.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)
        await consumer.aclose()
        await producer.drop()
    # "stall": nothing; the handler waits for the consumer to leave


async def _pump_up(consumer: trio.SocketStream, producer: _Leg) -> None:
    """Consumer -> producer until the consumer closes (or its leg is closed by a cut)."""
    while data := await _receive(consumer):
        await producer.send(data)
    if producer.open:
        await _send_eof(producer.stream)


# --- the loopback rig: producer -> relay -> consumer in one nursery ---------------------------


@dataclass(frozen=True, slots=True)
class LinkRun:
    """What one run left behind: the consumer's report, the producer's log, the relayed bytes
    (one entry per consumer connection) and how long the consumer took."""

    report: ConsumerReport
    log: ProducerLog
    forwarded: tuple[bytes, ...]
    seconds: float


async def run_link(
    producer: ProducerConfig,
    policy: ConsumerPolicy,
    plans: Sequence[Cut | None] = (),
    *,
    upstream_rcvbuf: int | None = None,
    on_pause: Callable[[ProducerLog], None] | None = None,
    limit_s: float = 5.0,
) -> LinkRun:
    """Serve ``producer`` on port 0, relay it with ``plans``, consume it with ``policy``.

    ``limit_s`` bounds the whole run: a hang fails the test instead of stalling the suite.
    """
    served = Producer(producer)
    with trio.fail_after(limit_s):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(served.serve)
            relay = Relay(
                port,
                plans,
                upstream_rcvbuf=upstream_rcvbuf,
                on_pause=None if on_pause is None else lambda: on_pause(served.log),
            )
            relay_port = await nursery.start(relay.serve)
            start = trio.current_time()
            report = await run_consumer("127.0.0.1", relay_port, policy)
            seconds = trio.current_time() - start
            nursery.cancel_scope.cancel()
    return LinkRun(report, served.log, tuple(bytes(b) for b in relay.forwarded), seconds)


def small_link(framing: str, payload: str, profile: str = "generic") -> LinkSpec:
    """The streams the link tests use: 3 messages of 20 B, an envelope of 5 records in chunks
    of 2 (header, 3 chunks, trailer), or 6 tokens of ``profile``."""
    return LinkSpec(
        framing=framing,
        payload=payload,
        messages=messages.MessagesSpec(count=3, size_bytes=20),
        envelope=envelope.EnvelopeSpec(5, 2),
        tokens=tokens.TokenStreamSpec(profile, tokens.default_tokens(6)),
    )


def consumer_config(link: LinkSpec, **overrides: Any) -> ConsumerConfig:
    """The consumer for ``link``, with short timeouts (the tests never wait for them unless a
    timeout is what they test)."""
    base = ConsumerConfig(
        framing=link.framing,
        payload=link.payload,
        token_profile=link.tokens.profile,
        framing_options=link.options,
        incomplete_message_timeout_s=0.5,
        idle_timeout_s=1.0,
    )
    return replace(base, **overrides)


def sent_digests(link: LinkSpec) -> list[str]:
    """SHA-256 (hex) of every message the producer sends on a clean connection."""
    return [hashlib.sha256(m.data).hexdigest() for m in iter_payload(link)]


def tallied(digests: Iterable[str]) -> tuple[int, str]:
    """The count and running hash a producer keeps of having sent ``digests``, in order."""
    tally = Tally.of(digests)
    return tally.count, tally.digest


def sent_by(conn: ConnectionLog) -> tuple[int, str]:
    """What one producer connection says it sent: its count and running hash."""
    return conn.sent.count, conn.sent.digest
