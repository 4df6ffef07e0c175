"""Wait until the peer has *read* every byte we wrote: how a declared split becomes two reads.

Fixed pauses (toxiproxy's slicer delay) only make a split likely. On loopback we can see the
state of both ends of the connection: our unacknowledged bytes (``SIOCOUTQ`` on our socket) and
the bytes waiting in the peer's receive queue (the ``rx_queue`` column of ``/proc/net/tcp``, the
Recv-Q that ``ss -tn`` prints). When both are zero the peer's application has read everything,
so the next bytes we send start a new read. For a peer we cannot see (not local), we fall back to
a fixed pause.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
from pathlib import Path

import trio

SIOCOUTQ = termios.TIOCOUTQ
POLL_S = 0.0002
FALLBACK_PAUSE_S = 0.005


def _hex_addr(host: str, port: int, family: int) -> str:
    """An address as /proc/net/tcp{,6} spells it (host-order words of the packed address)."""
    packed = socket.inet_pton(family, host)
    words = struct.unpack(f"<{len(packed) // 4}I", packed)
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def proc_key(sock: trio.socket.SocketType) -> tuple[str, str, Path] | None:
    """(peer's local address, peer's remote address, table) identifying the peer's socket line."""
    family = sock.family
    if family not in (socket.AF_INET, socket.AF_INET6):
        return None
    ours = sock.getsockname()[:2]
    theirs = sock.getpeername()[:2]
    table = Path("/proc/net/tcp" if family == socket.AF_INET else "/proc/net/tcp6")
    return _hex_addr(theirs[0], theirs[1], family), _hex_addr(ours[0], ours[1], family), table


def peer_rx_queue(key: tuple[str, str, Path]) -> int | None:
    """Bytes waiting unread in the peer's receive queue; None if the peer is not on this host."""
    local, remote, table = key
    try:
        lines = table.read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        cols = line.split()
        if cols[1] == local and cols[2] == remote:
            return int(cols[4].split(":")[1], 16)
    return None


def unacked(sock: trio.socket.SocketType) -> int:
    buf = fcntl.ioctl(sock.fileno(), SIOCOUTQ, b"\0\0\0\0")
    return int(struct.unpack("i", buf)[0])


async def wait_drained(
    sock: trio.socket.SocketType, key: tuple[str, str, Path] | None, timeout_s: float
) -> bool:
    """True once the peer read everything we sent; False on timeout or an unobservable peer
    (after a fixed fallback pause)."""
    if key is None:
        await trio.sleep(FALLBACK_PAUSE_S)
        return False
    with trio.move_on_after(timeout_s):
        while True:
            queued = peer_rx_queue(key)
            if queued is None:
                await trio.sleep(FALLBACK_PAUSE_S)
                return False
            if queued == 0 and unacked(sock) == 0:
                return True
            await trio.sleep(POLL_S)
    return False
