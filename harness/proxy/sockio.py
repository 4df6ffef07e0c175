"""Socket I/O for the proxy's hot path: straight ``os.read``/``os.write`` on trio's sockets.

trio's ``receive_some``/``send_all`` cost a third more per small message than these (the
conflict detector, their sandwich of checkpoints; ``benchmarks/bench_proxy.py``). Reading
before waiting measured faster than waiting first, even for ping-pong traffic. Errors are
trio's: ``BrokenResourceError``, or ``ClosedResourceError`` if the socket was closed meanwhile.
"""

from __future__ import annotations

import os
import socket
import struct

import trio


async def read_some(stream: trio.SocketStream, max_bytes: int) -> bytes:
    """Up to ``max_bytes`` read straight from the socket (b"" at EOF); a checkpoint."""
    sock = stream.socket
    await trio.lowlevel.checkpoint()
    while True:
        try:
            return os.read(sock.fileno(), max_bytes)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(sock)
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err


async def send_all(stream: trio.SocketStream, data: bytes) -> None:
    """Write all of ``data`` straight to the socket, waiting only when its buffer is full (the
    caller's ``read_some`` is the checkpoint)."""
    sock = stream.socket
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(sock.fileno(), view) :]
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err


def reset(stream: trio.SocketStream) -> None:
    """Make the coming close an RST: SO_LINGER on with a zero timeout."""
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
