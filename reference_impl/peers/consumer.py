"""The reference consumer: the trio shell around ``ConsumerSession``.

It owns the socket and the clock and maps transport events once, here: a zero-byte read is a FIN
(``"eof"``), ``trio.BrokenResourceError`` is an RST (``"rst"``), the session's deadline passing is
``"timeout"``. The kernel reports a reset once, to whichever call comes first: when a send took
it, the next read sees a bare EOF, which is then still an ``"rst"``. Reconnects and the seed-000
pause are policies of this shell; every decision about bytes is the session's.

Given a TLS context, the consumer speaks TLS (``trio.SSLStream``, SNI and the certificate's
name from ``host``): close_notify is a FIN (``"eof"``); a failed handshake is a failed connect,
a handshake the proxy reset is a reset link, as over TCP.
"""

from __future__ import annotations

import errno
import ssl
from dataclasses import replace

import trio

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.link.consumer_config import ConsumerConfig, ConsumerPolicy
from reference_impl.link.session import ConsumerSession
from reference_impl.report import ConsumerReport

__all__ = ["ConsumerConfig", "ConsumerPolicy", "run_consumer"]


async def _send(stream: trio.abc.Stream, data: bytes) -> bool:
    """Send ``data``; True if the send found the connection reset. A failed send is not the
    verdict: the read side tells how the link ended (with this flag's help)."""
    try:
        await stream.send_all(data)
    except trio.BrokenResourceError as err:
        return isinstance(err.__cause__, ConnectionResetError)
    return False


async def _read_connection(
    session: ConsumerSession, stream: trio.abc.Stream, policy: ConsumerPolicy, reset: bool
) -> None:
    paused = False
    while not session.done:
        with trio.move_on_at(session.deadline()) as waiting:
            try:
                data = await stream.receive_some(policy.read_bytes)
            except trio.BrokenResourceError:
                session.end_of_stream("rst", trio.current_time())
                return
            if not data:
                session.end_of_stream("rst" if reset else "eof", trio.current_time())
                return
            reply = session.receive(bytes(data), trio.current_time())
            if reply:
                reset = await _send(stream, reply) or reset
        if waiting.cancelled_caught:
            session.end_of_stream("timeout", trio.current_time())
        elif not paused and _should_pause(session, policy):
            # Outside the read deadline: that deadline was set before this read, so it must not
            # cut the pause short; the pause's own verdict comes from ``resume``.
            paused = True
            checkpoint = session.checkpoint()
            await trio.sleep(policy.pause_ms / 1000)  # the pause under test, not a sync
            session.resume(checkpoint, trio.current_time())


def _should_pause(session: ConsumerSession, policy: ConsumerPolicy) -> bool:
    n = policy.pause_at_message
    return (
        n is not None and not session.done and session.accepted_count >= n and session.has_partial
    )


async def _open(
    host: str, port: int, timeout_s: float, tls: ssl.SSLContext | None = None
) -> trio.abc.Stream | OSError:
    """A connected stream (its TLS handshake done, with ``tls``), or why there is none (a
    timeout is ``TimeoutError``)."""
    with trio.move_on_after(timeout_s):
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError as err:
            # trio reports "all attempts failed", with each attempt's error as the cause
            causes = getattr(err.__cause__, "exceptions", ())
            reset = any(getattr(c, "errno", None) == errno.ECONNRESET for c in causes)
            return ConnectionResetError(errno.ECONNRESET, str(err)) if reset else err
        if tls is None:
            return stream
        secure = trio.SSLStream(stream, tls, server_hostname=host)
        try:
            await secure.do_handshake()
        except trio.BrokenResourceError as err:
            await trio.aclose_forcefully(stream)
            cause = err.__cause__  # an ssl.SSLError, or the reset (both OSErrors)
            return cause if isinstance(cause, OSError) else OSError(errno.EPROTO, str(err))
        return secure
    return TimeoutError(errno.ETIMEDOUT, f"no connection within {timeout_s:g} s")


async def run_consumer(
    host: str, port: int, policy: ConsumerPolicy, tls: ssl.SSLContext | None = None
) -> ConsumerReport:
    """Consume one stream (reconnecting as the policy allows) and return the report; with
    ``tls`` (a client context), over TLS. The link's request names ``host:port``."""
    options = policy.config.framing_options
    named = replace(options, request=options.request.filled(host, port))
    session = ConsumerSession(replace(policy.config, framing_options=named))
    for attempt in range(policy.max_reconnects + 1):
        stream = await _open(host, port, policy.connect_timeout_s, tls)
        reset = isinstance(stream, ConnectionResetError)
        if isinstance(stream, OSError) and not reset:
            if attempt == 0:
                detail = f"{host}:{port}: {stream.strerror or stream}"
                return session.failed_to_connect(CodecError(ErrorCode.CONNECT_FAILED, detail))
            break
        if attempt > 0:
            session.discard_on_reconnect()
        if isinstance(stream, trio.abc.Stream):
            async with stream:
                refused = await _send(stream, session.connect(trio.current_time()))
                await _read_connection(session, stream, policy, refused)
        else:
            # The connection was made and reset before trio looked at it (a kill at byte 0
            # races the connect): that is a reset link, not a failed connect.
            session.connect(trio.current_time())
            session.end_of_stream("rst", trio.current_time())
        if not session.should_reconnect():
            break
    return session.report()
