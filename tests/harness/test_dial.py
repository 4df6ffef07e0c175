"""``sockio.dial``, the proxy's connection to its upstream: an IP literal (IPv4 or IPv6) is
connected to directly, a name through trio's resolver; a refused or cancelled dial raises and
leaves no descriptor behind; the stream is trio's, Nagle off, as ``open_tcp_stream`` makes it."""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import warnings
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from harness.proxy.sockio import dial


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextlib.contextmanager
def closed_not_collected() -> Iterator[None]:
    """Fails if a socket was left to the garbage collector (which would close it too, so the
    descriptor count alone cannot tell)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


@pytest.mark.parametrize(
    ("host", "family"), [("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)]
)
async def test_an_ip_literal_is_dialled_and_carries_bytes(host: str, family: int) -> None:
    listeners = await trio.open_tcp_listeners(0, host=host)
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:

        async def echo_once(stream: trio.SocketStream) -> None:
            await stream.send_all(await stream.receive_some(100))

        nursery.start_soon(trio.serve_listeners, echo_once, listeners)
        stream = await dial(host, port)
        assert stream.socket.family == family
        assert stream.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        await stream.send_all(b"ping")
        assert await stream.receive_some(100) == b"ping"
        await stream.aclose()
        nursery.cancel_scope.cancel()


async def test_a_name_goes_through_the_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, int]] = []

    async def resolved(host: str, port: int) -> trio.SocketStream:
        asked.append((host, port))
        raise OSError("all attempts to connect to localhost:9 failed")

    monkeypatch.setattr(trio, "open_tcp_stream", resolved)
    with pytest.raises(OSError):
        await dial("localhost", 9)
    assert asked == [("localhost", 9)]


async def test_a_refused_dial_raises_and_leaves_no_descriptor() -> None:
    with socket.socket() as unused:  # a port nobody listens on: bound, never listening
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        before = open_descriptors()
        with closed_not_collected(), pytest.raises(ConnectionRefusedError):
            await dial("127.0.0.1", port)
        assert open_descriptors() == before


async def test_a_cancelled_dial_leaves_no_descriptor() -> None:
    """A listener whose accept queue is full drops new SYNs, so the dial waits in ``connect``
    until the cancel comes."""
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        queued = [socket.create_connection(full.getsockname())]  # the queue holds one
        before = open_descriptors()
        with closed_not_collected():
            async with trio.open_nursery() as nursery:

                async def dialling() -> None:
                    await dial("127.0.0.1", full.getsockname()[1])

                nursery.start_soon(dialling)
                await trio.testing.wait_all_tasks_blocked()
                assert open_descriptors() == before + 1  # its socket, connecting
                nursery.cancel_scope.cancel()
        assert open_descriptors() == before
        for end in queued:
            end.close()
