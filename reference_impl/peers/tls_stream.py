"""TLS over a trio socket, with the half-close that ``trio.SSLStream`` does not have.

The fault proxy (both of its sides) and the reference producer speak TLS through this. It is
the stdlib's ``ssl.SSLObject`` between two memory BIOs, moved by ``os.read``/``os.write`` on the
socket as the proxy's plain path does (``harness/proxy/sockio.py``).

Why not ``trio.SSLStream``: it has no ``send_eof``, and its ``aclose`` sends close_notify and
closes the socket at once. A proxy relaying a producer's end must keep the consumer's direction
open (failure catalogue case 61), and the reference producer half-closes, then drains (case
60). TLS 1.3 closes one direction with close_notify (RFC 8446 section 6.1; OpenSSL reads on after
it sent one, with TLS 1.2 too), so ``send_eof`` sends close_notify and reading goes on. One trap:
``SSLObject.unwrap`` calls ``SSL_shutdown`` twice, and the second call reads what waits in the
incoming BIO and fails on application data (``APPLICATION_DATA_AFTER_CLOSE_NOTIFY``), losing
it; so ``send_eof`` first moves every complete record waiting there into a buffer of ours.

Ends as the plaintext sees them: close_notify is EOF (``b""``); the TCP stream ending without
close_notify (a "ragged" EOF, which many HTTPS servers send) is EOF too, as HTTPS clients treat
it, so that a peer's FIN never reaches the other side as a reset; a reset of the socket is
``trio.BrokenResourceError`` caused by ``ConnectionResetError``. ``aclose`` sends close_notify
(waiting at most ``CLOSE_NOTIFY_TIMEOUT_S`` for room in the socket's buffer), ``reset`` makes
the close an RST without one. The handshake has no timeout of its own: callers bound it with a
cancel scope.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import struct
from collections import deque

import trio

__all__ = ["TlsStream", "describe_tls_error"]

#: ciphertext asked for per socket read (many 16 KiB records at once when they are there)
RAW_READ_BYTES = 256 * 1024
#: how long a close waits for room in the socket's send buffer to queue its close_notify
CLOSE_NOTIFY_TIMEOUT_S = 2.0
_LINGER_ZERO = struct.pack("ii", 1, 0)


def describe_tls_error(err: BaseException) -> str:
    """One line saying why a TLS handshake (or record) failed, OpenSSL's reason included."""
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {err.verify_message}"
    if isinstance(err, ssl.SSLEOFError):
        return "the peer closed the connection during the TLS handshake"
    if isinstance(err, ssl.SSLError):
        reason = err.reason or str(err)
        if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE"):
            return f"the peer does not speak TLS ({reason})"
        return f"TLS error: {reason}"
    return str(err) or type(err).__name__


class TlsStream(trio.abc.HalfCloseableStream):
    """One TLS connection over ``transport``; call ``do_handshake`` before anything else."""

    def __init__(
        self,
        transport: trio.SocketStream,
        context: ssl.SSLContext,
        *,
        server_side: bool,
        server_hostname: str | None = None,
    ) -> None:
        self.transport = transport
        #: the TCP socket underneath (its queues tell what the peer has read, ``drain.py``)
        self.socket = transport.socket
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = context.wrap_bio(
            self._incoming,
            self._outgoing,
            server_side=server_side,
            server_hostname=server_hostname,
        )
        self._plain = bytearray()  # decrypted before a half-close, not yet returned
        self._backlog: deque[memoryview] = deque()  # ciphertext not yet written, in order
        self._writing = False  # a task is writing the backlog (it writes what others add)
        self._received_eof = False
        self._sent_eof = False
        self._handshaken = False
        self._reset = False
        self._closed = False

    # -- handshake and what it agreed ------------------------------------------------------
    async def do_handshake(self) -> None:
        """Handshake; ``trio.BrokenResourceError`` with ``describe_tls_error``'s line (its
        cause the ``ssl`` error) when it fails. Bound it with a cancel scope."""
        while True:
            try:
                self._ssl.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush()
                await self._fill()
                continue
            except ssl.SSLError as err:  # verification failures included
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    self._flush_now()  # the alert, so the peer learns why
                raise trio.BrokenResourceError(describe_tls_error(err)) from err
            break
        await self._flush()
        self._handshaken = True

    def selected_alpn_protocol(self) -> str | None:
        return self._ssl.selected_alpn_protocol()

    # -- reading ------------------------------------------------------------------------------
    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        size = RAW_READ_BYTES if max_bytes is None else max_bytes
        await trio.lowlevel.checkpoint()
        while True:
            if self._plain:
                data = bytes(self._plain[:size])
                del self._plain[:size]
                return data
            if self._closed:
                raise trio.ClosedResourceError("this TLS stream was closed")
            if self._received_eof:
                return b""
            record = self._decrypt(size)
            if record is None:  # a record is not complete yet
                if self._outgoing.pending:  # a key update or a ticket answered
                    await self._flush()
                await self._fill()
                continue
            if record and len(record) < size:
                record = self._more(record, size)
            if self._outgoing.pending:
                await self._flush()
            return record

    def _more(self, first: bytes, size: int) -> bytes:
        """``first`` and the plaintext of the complete records behind it, up to ``size``: one
        read per socket read, as over TCP, not one per 16 KiB record (a read costs a trip
        through the proxy's leg)."""
        parts, total = [first], len(first)
        while total < size:
            try:
                record = self._decrypt(size - total)
            except trio.BrokenResourceError:
                break  # the next read meets it again
            if not record:  # none complete, or the end (recorded: the next read returns b"")
                break
            parts.append(record)
            total += len(record)
        return b"".join(parts) if len(parts) > 1 else first

    def _decrypt(self, size: int) -> bytes | None:
        """Plaintext of the next record (``b""`` once the peer ended), or None to read more."""
        try:
            data = self._ssl.read(size)
        except ssl.SSLWantReadError:
            return None
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # close_notify; a ragged EOF
            data = b""
        except ssl.SSLError as err:
            raise trio.BrokenResourceError(describe_tls_error(err)) from err
        if not data:
            self._received_eof = True
        return data

    async def _fill(self) -> None:
        """Read ciphertext from the socket into the incoming BIO (waiting for some)."""
        sock = self.socket
        while True:
            try:
                raw = os.read(sock.fileno(), RAW_READ_BYTES)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(sock)
                continue
            except OSError as err:
                raise trio.BrokenResourceError(str(err)) from err
            if raw:
                self._incoming.write(raw)
            else:
                self._incoming.write_eof()
            return

    # -- writing ------------------------------------------------------------------------------
    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self._sent_eof or self._closed:
            raise trio.ClosedResourceError("this TLS stream's sending side was closed")
        await trio.lowlevel.checkpoint()
        if data:
            try:
                self._ssl.write(data)
            except ssl.SSLError as err:
                raise trio.BrokenResourceError(describe_tls_error(err)) from err
        await self._flush()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.wait_writable(self.socket)

    async def _flush(self) -> None:
        """Write all pending ciphertext, in order, whichever task made it."""
        self._queue()
        if self._writing:
            return  # the writing task sends what was just added, after its own bytes
        self._writing = True
        try:
            while self._backlog:
                if not self._write_some():
                    await trio.lowlevel.wait_writable(self.socket)
        finally:
            self._writing = False

    def _flush_now(self) -> None:
        """Write what the socket's buffer takes now, without waiting."""
        self._queue()
        if not self._writing:
            while self._backlog and self._write_some():
                pass

    def _queue(self) -> None:
        """Move what the SSL object wrote into the backlog (no copy: views of its bytes)."""
        if self._outgoing.pending:
            self._backlog.append(memoryview(self._outgoing.read()))

    def _write_some(self) -> bool:
        """One write from the backlog; False when the socket's buffer is full."""
        head = self._backlog[0]
        try:
            written = os.write(self.socket.fileno(), head)
        except BlockingIOError:
            return False
        except OSError as err:
            raise trio.BrokenResourceError(str(err)) from err
        if written == len(head):
            self._backlog.popleft()
        else:
            self._backlog[0] = head[written:]
        return True

    # -- ends -------------------------------------------------------------------------------
    async def send_eof(self) -> None:
        """close_notify: this direction ends, the peer's goes on (see the module docstring)."""
        if self._sent_eof or self._closed:
            return
        self._sent_eof = True
        self._keep_waiting_records()
        with contextlib.suppress(ssl.SSLError):  # SSLWantReadError: sent, no answer yet
            self._ssl.unwrap()
        await self._flush()

    def _keep_waiting_records(self) -> None:
        """Move the plaintext of every complete record in the incoming BIO into ``_plain``."""
        while not self._received_eof:
            try:
                data = self._decrypt(RAW_READ_BYTES)
            except trio.BrokenResourceError:
                return  # the next read meets the same error
            if not data:
                return
            self._plain += data

    def reset(self) -> None:
        """Make the coming close an RST: no close_notify, SO_LINGER on with a zero timeout."""
        self._reset = True
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)

    async def aclose(self) -> None:
        """close_notify (unless reset or already sent), then close the socket. Cancelled or
        not, the close_notify gets up to ``CLOSE_NOTIFY_TIMEOUT_S`` to be queued: a peer that
        misses it would see the end as a truncation."""
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        try:
            if self._handshaken and not self._reset and not self._sent_eof:
                self._sent_eof = True
                self._keep_waiting_records()
                with contextlib.suppress(ssl.SSLError):
                    self._ssl.unwrap()
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(CLOSE_NOTIFY_TIMEOUT_S),
                    contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
                ):
                    await self._flush()
        finally:
            self._closed = True
            await self.transport.aclose()
