"""Wait until the peer has *read* every byte we wrote: how a declared split becomes two reads.

Fixed pauses (toxiproxy's slicer delay) only make a split likely. On loopback we can see the
state of both ends of the connection: our unacknowledged bytes (``SIOCOUTQ`` on our socket) and
the bytes waiting in the peer's receive queue (its Recv-Q, which ``ss -tn`` prints). When both
are zero the peer's application has read everything, so the next bytes we send start a new read.
For a peer we cannot see (not local), we fall back to a fixed pause.

The Recv-Q comes from the kernel's sock_diag netlink interface, asking for exactly the peer's
socket (what ``ss`` does): about 2 us a query. Reading ``/proc/net/tcp`` instead, the fallback
where netlink is not allowed, formats every socket of the host: over 1 ms with a few hundred
sockets (TIME_WAIT ones count), which made each split cost milliseconds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import socket
import struct
import termios
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import trio

SIOCOUTQ = termios.TIOCOUTQ
#: trio's shortest real sleep (epoll rounds timeouts up to whole milliseconds). Most checks
#: succeed at once (an awake consumer reads within tens of us); polling faster, by yielding,
#: measured slower under CPU load: the spinning proxy takes the core the consumer needs.
POLL_S = 0.001
#: how long the first checks only yield, before sleeping ``POLL_S`` between checks: most
#: consumers read within this (a split cost 0.66 ms on average when every failed check slept)
SPIN_S = 0.0002
FALLBACK_PAUSE_S = 0.005

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
DIAG_RQUEUE_AT = NLMSG_HEADER.size + 56  # idiag_rqueue in struct inet_diag_msg
ALL_STATES = 0xFFFFFFFF
NO_COOKIE = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class PeerKey:
    """The peer's socket, as sock_diag and as ``/proc/net/tcp{,6}`` name it."""

    request: bytes  # SOCK_DIAG_BY_FAMILY request for exactly that socket
    local: str  # its local address, /proc spelling
    remote: str
    table: Path


def _hex_addr(host: str, port: int, family: int) -> str:
    """An address as /proc/net/tcp{,6} spells it (host-order words of the packed address)."""
    packed = socket.inet_pton(family, host)
    words = struct.unpack(f"<{len(packed) // 4}I", packed)
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def _diag_request(family: int, local: tuple[str, int], remote: tuple[str, int]) -> bytes:
    """A netlink request for the TCP socket bound to ``local`` and connected to ``remote``."""
    src, dst = (socket.inet_pton(family, host).ljust(16, b"\0") for host, _ in (local, remote))
    sockid = struct.pack("!HH16s16s", local[1], remote[1], src, dst)
    sockid += struct.pack("=III", 0, NO_COOKIE, NO_COOKIE)  # any interface, no cookie
    body = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, ALL_STATES) + sockid
    size = NLMSG_HEADER.size + len(body)
    return NLMSG_HEADER.pack(size, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 0, 0) + body


def proc_key(sock: trio.socket.SocketType) -> PeerKey | None:
    """How to find the peer's socket (the other end of ``sock``); None if not TCP/IP."""
    family = sock.family
    if family not in (socket.AF_INET, socket.AF_INET6):
        return None
    try:
        ours = sock.getsockname()[:2]
        theirs = sock.getpeername()[:2]
    except OSError:  # the peer is already gone (ENOTCONN): nothing left to observe
        return None
    table = Path("/proc/net/tcp" if family == socket.AF_INET else "/proc/net/tcp6")
    return PeerKey(
        _diag_request(family, theirs, ours),
        _hex_addr(theirs[0], theirs[1], family),
        _hex_addr(ours[0], ours[1], family),
        table,
    )


@contextlib.contextmanager
def diag_socket() -> Iterator[socket.socket | None]:
    """A sock_diag netlink socket, or None where it is not allowed (then /proc is read)."""
    try:
        diag = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    except OSError:
        yield None
        return
    with diag:
        yield diag


def _diag_rx_queue(diag: socket.socket, key: PeerKey) -> int | None:
    diag.send(key.request)
    reply = diag.recv(65536)
    kind = NLMSG_HEADER.unpack_from(reply)[1]
    if kind == NLMSG_ERROR:  # ENOENT: no such socket on this host
        code = -struct.unpack_from("=i", reply, NLMSG_HEADER.size)[0]
        if code != errno.ENOENT:
            raise OSError(code, "sock_diag")
        return None
    return int(struct.unpack_from("=I", reply, DIAG_RQUEUE_AT)[0])


def _proc_rx_queue(key: PeerKey) -> int | None:
    try:
        lines = key.table.read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        cols = line.split()
        if cols[1] == key.local and cols[2] == key.remote:
            return int(cols[4].split(":")[1], 16)
    return None


def peer_rx_queue(key: PeerKey, diag: socket.socket | None = None) -> int | None:
    """Bytes waiting unread in the peer's receive queue; None if the peer is not on this host.

    Asks ``diag`` (a ``diag_socket()``) if given, else reads ``/proc/net/tcp``."""
    return _proc_rx_queue(key) if diag is None else _diag_rx_queue(diag, key)


def unacked(sock: trio.socket.SocketType) -> int:
    buf = fcntl.ioctl(sock.fileno(), SIOCOUTQ, b"\0\0\0\0")
    return int(struct.unpack("i", buf)[0])


def _peer_on_loopback(sock: trio.socket.SocketType) -> bool:
    try:
        host = sock.getpeername()[0]
    except OSError:
        return True  # not connected any more: the peer closed
    return isinstance(host, str) and (host.startswith("127.") or host == "::1")


async def wait_drained(sock: trio.socket.SocketType, key: PeerKey | None, timeout_s: float) -> bool:
    """True once the peer read everything we sent; False on timeout or an unobservable peer
    (after a fixed fallback pause)."""
    if key is None:
        await trio.sleep(FALLBACK_PAUSE_S)
        return False
    started = trio.current_time()
    with trio.move_on_after(timeout_s), diag_socket() as diag:
        while True:
            queued = peer_rx_queue(key, diag)
            if queued is None and _peer_on_loopback(sock):
                # The peer's socket is gone: it closed and will read nothing more, so nothing
                # written after this boundary can be fused with what came before.
                return True
            if queued is None:
                await trio.sleep(FALLBACK_PAUSE_S)
                return False
            if queued == 0 and unacked(sock) == 0:
                return True
            await _pause(trio.current_time() - started)
    return False


async def _pause(waited_s: float) -> None:
    """Between two checks: at first only yield (an awake consumer reads within tens of us,
    and a sleep cannot be shorter than epoll's millisecond), then sleep ``POLL_S``."""
    if waited_s < SPIN_S:
        await trio.lowlevel.checkpoint()
    else:
        await trio.sleep(POLL_S)
