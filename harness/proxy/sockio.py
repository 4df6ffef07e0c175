"""The proxy's two ends of a connection as endpoints: plain TCP, the hot path, or TLS.

A leg reads its source and writes its destination through an ``Endpoint``: ``read_some``,
``send_all``, ``reset`` (make the coming close an RST), ``close_write`` (half-close) and
``aclose``. Faults and watchers see what these return and take: plaintext, whatever the wire.

``PlainEndpoint`` is straight ``os.read``/``os.write`` on trio's sockets: trio's
``receive_some``/``send_all`` cost a third more per small message than these (the conflict
detector, their sandwich of checkpoints; ``benchmarks/bench_proxy.py``). Reading before waiting
measured faster than waiting first, even for ping-pong traffic. ``TlsEndpoint`` is a
``TlsStream`` (``reference_impl/peers/tls_stream.py``): its ``close_write`` sends close_notify and
keeps reading (TLS 1.3's half-close), its ``reset`` sends no close_notify and closes with
SO_LINGER 0. Errors are trio's: ``BrokenResourceError``, or ``ClosedResourceError`` if the
endpoint was closed meanwhile.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from typing import Protocol

import trio

from reference_impl.peers.tls_stream import TlsStream

_LINGER_ZERO = struct.pack("ii", 1, 0)


class Endpoint(Protocol):
    """One end of a proxied connection, as a leg uses it."""

    #: the TCP socket underneath (``drain.py`` reads its queues)
    socket: trio.socket.SocketType

    async def read_some(self, max_bytes: int) -> bytes: ...

    async def send_all(self, data: bytes) -> None: ...

    def write_now(self, data: bytes) -> int:
        """How much of ``data`` the destination takes at once, without waiting (then
        ``send_all`` the rest): no coroutine for the usual write."""
        ...

    def reset(self) -> None: ...

    async def close_write(self) -> None: ...

    async def aclose(self) -> None: ...


class PlainEndpoint:
    """A TCP connection, read and written straight on its socket."""

    __slots__ = ("socket", "stream")

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.socket = stream.socket

    async def read_some(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` read straight from the socket (b"" at EOF); a checkpoint, and
        one scheduler pass only: a read that must wait yields in ``wait_readable`` (where a
        cancel finds no bytes in hand), one that need not yields after it, shielded (the
        bytes read are never lost to a cancel, which the next read raises). A checkpoint
        before every read as well cost a pass per message: 10 us of a 70 us round trip."""
        await trio.lowlevel.checkpoint_if_cancelled()
        data = self._read_now(max_bytes)
        if data is not None:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return data
        while data is None:  # (woken without bytes after all: wait again)
            await trio.lowlevel.wait_readable(self.socket)
            data = self._read_now(max_bytes)
        return data

    def _read_now(self, max_bytes: int) -> bytes | None:
        """What the socket holds, up to ``max_bytes`` (b"" at EOF), or None if nothing yet."""
        try:
            return os.read(self.socket.fileno(), max_bytes)
        except BlockingIOError:
            return None
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err

    def write_now(self, data: bytes) -> int:
        try:
            return os.write(self.socket.fileno(), data)
        except BlockingIOError:
            return 0
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err

    async def send_all(self, data: bytes) -> None:
        """Write all of ``data`` straight to the socket, waiting only when its buffer is full
        (the caller's ``read_some`` is the checkpoint)."""
        sock = self.socket
        written = self.write_now(data)  # the usual case, a write the buffer takes whole
        if written == len(data):
            return
        view = memoryview(data)[written:]
        while view:
            try:
                view = view[os.write(sock.fileno(), view) :]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(sock)
            except OSError as err:
                raise trio.BrokenResourceError(str(err)) from err

    def reset(self) -> None:
        """Make the coming close an RST: SO_LINGER on with a zero timeout."""
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)

    async def close_write(self) -> None:
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


class TlsEndpoint:
    """A TLS connection whose handshake is done; the proxy reads and writes its plaintext."""

    __slots__ = ("socket", "stream")

    def __init__(self, stream: TlsStream) -> None:
        self.stream = stream
        self.socket = stream.socket

    async def read_some(self, max_bytes: int) -> bytes:
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes) -> None:
        await self.stream.send_all(data)

    def write_now(self, data: bytes) -> int:
        return 0  # a TLS record goes out whole or not at all: ``send_all``

    def reset(self) -> None:
        self.stream.reset()

    async def close_write(self) -> None:
        """close_notify: TLS's end of this direction (the peer's direction stays open)."""
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


def reset(stream: trio.SocketStream) -> None:
    """Make the coming close of a TCP stream an RST (SO_LINGER on with a zero timeout)."""
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)


async def dial(host: str, port: int) -> trio.SocketStream:
    """A TCP connection to ``host:port``, as ``trio.open_tcp_stream`` makes it. An IP literal
    (an upstream usually is one) is connected to directly: the resolver call and the
    happy-eyeballs nursery of ``open_tcp_stream`` cost about 100 us a connection, a seventh of
    a short connection's time through the proxy (``benchmarks/bench_connections.py``). A name
    goes through ``open_tcp_stream`` (every address it resolves to is tried)."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return await trio.open_tcp_stream(host, port)
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((host, port))
    except BaseException:
        sock.close()  # refused, unreachable or cancelled: no descriptor left behind
        raise
    return trio.SocketStream(sock)
