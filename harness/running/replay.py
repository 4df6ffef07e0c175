"""The replay producer: a recording played back to every connection (trio, loopback).

It listens like the reference producer (``serve(host, port, task_status)`` for
``nursery.start``). For each connection it reads the consumer's request, then writes the
recorded producer bytes on the recorded schedule (``plan.py``: one write per recorded read,
its delay divided by the speed; on WebSocket with the live request's accept token,
``adapt.py``) and ends as the producer did: FIN, RST, or left open until the consumer closes.
What the consumer sends meanwhile is read and dropped, so a consumer that keeps writing
(WebSocket pongs, HTTP/2 window updates) is never blocked by a full buffer.

The request is in when the consumer has sent as many bytes as the recorded consumer had
before the producer's first byte, or when ``request_idle_s`` passes without a new byte after
its first one (a consumer whose request is shorter than the recorded one). Before the first
byte there is no idle limit: a consumer program may take its time to connect and write; the
case deadline bounds the wait.

The bytes are the recorded ones, verbatim. On HTTP/2 (gRPC) that includes HPACK state and
stream ids: a client whose request differs from the recorded client's (another stream id,
other header table use) gets frames it does not expect. docs/recording-format.md says so.
"""

from __future__ import annotations

import contextlib
import ssl
from functools import partial

import trio

from harness.proxy.sockio import reset
from harness.record.adapt import HEAD_BYTES, adapted
from harness.record.format import Problem, Recording, RecordingError, read_recording
from harness.record.schedule import ReplayPlan, Write, replay_plan
from harness.scenario.model import ProducerConfig
from reference_impl.defaults import LOOPBACK
from reference_impl.peers.producer import HANDSHAKE_TIMEOUT_S
from reference_impl.peers.tls_stream import TlsStream

#: how long a request may pause after its first byte before it counts as complete
REQUEST_IDLE_S = 0.1
READ_BYTES = 65536
_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)


class _Incoming:
    """What the consumer sent on one connection (counted, then dropped but for its head)."""

    def __init__(self) -> None:
        self.received = 0
        #: the first bytes, where a request's headers are (the WebSocket key)
        self.head = bytearray()
        self.closed = trio.Event()
        self._changed = trio.Event()

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        with contextlib.suppress(*_GONE):
            while data := await stream.receive_some(READ_BYTES):
                self.received += len(data)
                if len(self.head) < HEAD_BYTES:
                    self.head += data[: HEAD_BYTES - len(self.head)]
                self._changed.set()
                self._changed = trio.Event()
        self.closed.set()
        self._changed.set()

    async def request(self, size: int, idle_s: float) -> None:
        """Until ``size`` bytes came, the consumer closed, or it paused ``idle_s`` after its
        first byte."""
        while self.received < size and not self.closed.is_set():
            changed = self._changed
            if self.received == 0:
                await changed.wait()
                continue
            with trio.move_on_after(idle_s) as scope:
                await changed.wait()
            if scope.cancelled_caught:
                return


class ReplayProducer:
    def __init__(
        self, recording: Recording, speed: float = 1.0, *, request_idle_s: float = REQUEST_IDLE_S
    ) -> None:
        self.recording = recording
        self.plan: ReplayPlan = replay_plan(recording, speed)
        self.request_idle_s = request_idle_s
        self.connections = 0
        #: per connection, the seconds after its request was in at which each write started
        self.writes: list[list[float]] = []

    @classmethod
    def of(cls, config: ProducerConfig, framing: str) -> ReplayProducer:
        """The replay a link's producer section names; RecordingError if it cannot be read or
        was recorded over another framing (a sweep may change the framing after loading)."""
        assert config.replay is not None
        recording = read_recording(config.replay)
        if recording.meta.framing != framing:
            raise RecordingError(
                f"recorded over framing {recording.meta.framing}, this link's is {framing}",
                file=config.replay,
                problem=Problem.MALFORMED,
            )
        return cls(recording, config.speed)

    async def serve(
        self,
        host: str = LOOPBACK,
        port: int = 0,
        *,
        tls: ssl.SSLContext | None = None,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen on ``host:port`` (0: a port from the OS), over TLS with ``tls`` (a server
        context: a case with ``link.tls`` gets the reference producer's), and report the port."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, partial(self.handle, tls=tls), listeners)
            task_status.started(listeners[0].socket.getsockname()[1])

    async def handle(self, transport: trio.SocketStream, tls: ssl.SSLContext | None = None) -> None:
        """One connection: the TLS handshake if any, then the replay."""
        if tls is None:
            await self.play(transport)
            return
        secure = TlsStream(transport, tls, server_side=True)
        try:
            with trio.fail_after(HANDSHAKE_TIMEOUT_S):
                await secure.do_handshake()
        except (trio.TooSlowError, ssl.SSLError, *_GONE):
            await secure.aclose()  # the proxy reports the failed handshake on its side
            return
        await self.play(secure)

    async def play(self, stream: trio.abc.HalfCloseableStream) -> None:
        """Replay the recording to one connection's stream."""
        self.connections += 1
        times: list[float] = []
        self.writes.append(times)
        async with stream:
            incoming = _Incoming()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(incoming.drain, stream)
                await incoming.request(self.plan.request_bytes, self.request_idle_s)
                framing = self.recording.meta.framing
                writes = adapted(self.plan.writes, framing, bytes(incoming.head))
                with contextlib.suppress(*_GONE):  # the consumer went away: nothing to end
                    await self._play(stream, writes, times)
                    await self._end(stream, incoming)
                nursery.cancel_scope.cancel()

    async def _play(
        self, stream: trio.abc.SendStream, writes: tuple[Write, ...], times: list[float]
    ) -> None:
        start = trio.current_time()
        for write in writes:
            await trio.sleep_until(start + write.at_s)
            times.append(trio.current_time() - start)
            await stream.send_all(write.data)
        await trio.sleep_until(start + self.plan.end_at_s)

    async def _end(self, stream: trio.abc.HalfCloseableStream, incoming: _Incoming) -> None:
        if self.plan.end == "rst":
            if isinstance(stream, TlsStream):
                stream.reset()
            elif isinstance(stream, trio.SocketStream):
                reset(stream)
            await stream.aclose()
            return
        if self.plan.end == "eof":
            # a half-close: the producer's FIN, while the consumer may still say goodbye
            await stream.send_eof()
        await incoming.closed.wait()
