"""The reference producer: a trio TCP server that streams a link's payload to each consumer.

One connection = handshake, then messages, then the framing's explicit end, then a graceful close
(``send_eof`` first, then drain the consumer until it closes: closing with unread bytes would send
an RST instead of a FIN, failure catalogue case 60).

Backpressure (seed 001 §3): a traversal task hands messages over a bounded channel; the sender
takes them out only as fast as the socket accepts bytes, so a slow consumer pauses the traversal
and the producer holds at most ``channel_capacity + 1`` messages (produced, not yet written).
``ProducerLog`` records that peak (invariant I6) and what was sent.

Given a TLS context, ``serve`` speaks TLS (``tls_stream.py``): the handshake is bounded by the
handshake timeout, the half-close is close_notify, and the drain works as over TCP.
"""

from __future__ import annotations

import hashlib
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

import trio

from reference_impl.defaults import LOOPBACK
from reference_impl.events import Message
from reference_impl.framing import FramingName, make_server
from reference_impl.framing.base import ServerCodec
from reference_impl.link.spec import ProducerConfig, iter_payload
from reference_impl.peers.tls_stream import TlsStream
from reference_impl.report import Tally

__all__ = ["ConnectionLog", "Producer", "ProducerConfig", "ProducerLog"]

HANDSHAKE_TIMEOUT_S = 10.0
DRAIN_TIMEOUT_S = 2.0
READ_BYTES = 65536


@dataclass(slots=True)
class ConnectionLog:
    number: int
    #: the messages fully written: a count and a running hash of their SHA-256s, not a list
    #: (a stream of any length in O(1) memory; nothing judges the producer's list)
    sent: Tally = field(default_factory=Tally)
    completed: bool = False  # the framing's end was written
    produced: int = 0  # messages the traversal has made
    max_held: int = 0  # peak messages produced but not yet written (I6)
    error: str = ""
    #: the status the request was refused with (a route the link does not serve)
    refused: int | None = None


@dataclass(slots=True)
class ProducerLog:
    connections: list[ConnectionLog] = field(default_factory=list)

    def sent_count(self) -> int:
        return sum(conn.sent.count for conn in self.connections)


class _Connection:
    """One accepted consumer: the codec, the socket, and the flow-control handshake."""

    def __init__(
        self, stream: trio.abc.HalfCloseableStream, codec: ServerCodec, log: ConnectionLog
    ) -> None:
        self.stream, self.codec, self.log = stream, codec, log
        self.credit = trio.Event()
        self.peer_closed = trio.Event()

    async def read_loop(self) -> None:
        """Feed the consumer's bytes (request, acks, credit) to the codec until it closes."""
        try:
            while data := await self.stream.receive_some(READ_BYTES):
                self.codec.receive_data(bytes(data))
                self.credit.set()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.peer_closed.set()
            self.credit.set()

    async def close_gracefully(self) -> None:
        """FIN, then let the read loop drain until the consumer closes (bounded), so our close
        is never an RST (failure catalogue case 60)."""
        await self.stream.send_eof()
        with trio.move_on_after(DRAIN_TIMEOUT_S):
            await self.peer_closed.wait()

    async def flush(self) -> None:
        """Write what the codec has framed, waiting for flow-control credit when blocked."""
        while True:
            # A new event before the write: credit read while send_all waits must wake us
            # (made after it, the event would miss a WINDOW_UPDATE that came meanwhile).
            self.credit = trio.Event()
            data = self.codec.data_to_send()
            if data:
                await self.stream.send_all(data)
            if not self.codec.blocked:
                return
            if self.peer_closed.is_set():
                raise trio.BrokenResourceError("consumer left while the stream was blocked")
            await self.credit.wait()


async def _traverse(
    source: Iterator[Message], channel: trio.MemorySendChannel[Message], log: ConnectionLog
) -> None:
    async with channel:
        for message in source:
            # Counted here, not from the channel's statistics: a message waiting in a blocked
            # send() is held too, though the channel does not list it in its buffer.
            log.produced += 1
            log.max_held = max(log.max_held, log.produced - log.sent.count)
            await channel.send(message)


async def _send_stream(conn: _Connection, spec: ProducerConfig, start: int) -> None:
    # The traversal holds the message it is handing over while send() blocks, so a channel of
    # C_cap - 1 lets it run C_cap messages ahead of the one being written: C_cap + 1 held (I6).
    send, receive = trio.open_memory_channel[Message](max(spec.channel_capacity - 1, 0))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_traverse, iter_payload(spec.link, start), send, conn.log)
        async with receive:
            async for message in receive:
                conn.codec.send_message(message)
                await conn.flush()
                conn.log.sent.add(hashlib.sha256(message.data).hexdigest())
    conn.codec.end(ok=True)
    await conn.flush()
    conn.log.completed = True


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


class Producer:
    """Serves ``config`` to every consumer that connects; ``log`` says what went out."""

    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.log = ProducerLog()

    def _start_index(self, codec: ServerCodec) -> int:
        if not self.config.resume:
            return 0
        last_id = codec.request_header("last-event-id")
        if last_id and last_id.isdigit():
            return int(last_id)
        if self.config.link.framing == FramingName.SSE:
            # No Last-Event-ID: the consumer dispatched no event yet, whatever this producer
            # wrote before the cut. Start over (catalogue case 32), never skip ahead.
            return 0
        return self.log.sent_count()

    async def handle(self, transport: trio.SocketStream, tls: ssl.SSLContext | None = None) -> None:
        log = ConnectionLog(len(self.log.connections) + 1)
        self.log.connections.append(log)
        stream: trio.abc.HalfCloseableStream = transport
        try:
            if tls is not None:
                stream = secure = TlsStream(transport, tls, server_side=True)
                with trio.fail_after(HANDSHAKE_TIMEOUT_S):
                    await secure.do_handshake()
            conn = _Connection(
                stream, make_server(self.config.link.framing, self.config.link.options), log
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.read_loop)
                with trio.fail_after(HANDSHAKE_TIMEOUT_S):
                    while not conn.codec.ready:
                        # HTTP/2's server preface (SETTINGS) goes out before the request:
                        # some clients (grpcio) send no request until they have it. The event
                        # is new before the flush, so a request read while it writes wakes us.
                        conn.credit = trio.Event()
                        await conn.flush()
                        if conn.peer_closed.is_set():
                            raise trio.BrokenResourceError("closed during handshake")
                        if not conn.codec.ready:
                            await conn.credit.wait()
                await conn.flush()
                if conn.codec.refused is None:
                    await _send_stream(conn, self.config, self._start_index(conn.codec))
                else:  # a request its route does not serve: the refusal went out instead
                    log.refused = conn.codec.refused
                await conn.close_gracefully()
                nursery.cancel_scope.cancel()
        except* Exception as group:
            # One consumer's misbehaviour (a reset, a protocol violation its codec refuses, a
            # close frame in mid-stream) ends its own connection, never the server. Errors
            # inside a nursery arrive wrapped in (nested) exception groups.
            log.error = type(_first_leaf(group)).__name__
        finally:
            await stream.aclose()

    async def serve(
        self,
        host: str = LOOPBACK,
        port: int = 0,
        *,
        tls: ssl.SSLContext | None = None,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen on ``host:port`` (0 = a port from the OS) and report the port when ready;
        with ``tls`` (a server context), over TLS."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = listeners[0].socket.getsockname()[1]
        handler = self.handle if tls is None else partial(self.handle, tls=tls)
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, handler, listeners)
            task_status.started(bound)
