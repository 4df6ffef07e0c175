"""Every connection of a long-running proxy ends: once one side has gone, the connection
closes when the other has sent nothing for ``idle_after_end_s`` (``tearline proxy
--idle-after-end-s``), and only then: a stream still flowing after a half-close is carried."""

from __future__ import annotations

import trio

from harness.evidence.timeline import Timeline
from harness.faults.items import Direction
from harness.link.live import LinkTraits, LiveStream
from harness.proxy.server import Proxy, ProxyConfig
from tests.harness.conftest import LOOPBACK, read_all, serve

IDLE_S = 0.5


async def start(nursery: trio.Nursery, port: int, notes: list[str]) -> tuple[Proxy, int]:
    config = ProxyConfig((LOOPBACK, port), idle_after_end_s=IDLE_S, log=notes.append)
    proxy = Proxy(config, Timeline())
    listening: int = await nursery.start(proxy.serve, LOOPBACK, 0)
    return proxy, listening


async def test_a_client_gone_in_front_of_a_silent_service_ends_its_connection() -> None:
    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()  # reads nothing, sends nothing, never closes

    notes: list[str] = []
    async with trio.open_nursery() as nursery:
        proxy, port = await start(nursery, await serve(nursery, silent), notes)
        client = await trio.open_tcp_stream(LOOPBACK, port)
        await client.send_all(b"GET / HTTP/1.1\r\n\r\n")
        await client.aclose()
        with trio.fail_after(10):  # the bound the test checks is IDLE_S; this is a backstop
            while proxy.connections < 1 or proxy.active:
                await proxy.wait_closed_connection()
        nursery.cancel_scope.cancel()
    assert notes[-2:] == [
        f"connection 1: one side ended and the other sent nothing for {IDLE_S:g} s: closing",
        "connection 1: closed",
    ]


async def test_a_stream_still_flowing_after_a_half_close_is_carried_whole() -> None:
    pieces = [b"piece %d\n" % i for i in range(8)]

    async def slow(stream: trio.SocketStream) -> None:
        await read_all(stream)  # the client's request, up to its FIN
        for piece in pieces:  # each well within IDLE_S of the one before
            await stream.send_all(piece)
            await trio.sleep(IDLE_S / 10)
        await stream.aclose()

    notes: list[str] = []
    async with trio.open_nursery() as nursery:
        _, port = await start(nursery, await serve(nursery, slow), notes)
        async with await trio.open_tcp_stream(LOOPBACK, port) as client:
            await client.send_all(b"request")
            await client.send_eof()
            got = await read_all(client)
        nursery.cancel_scope.cancel()
    assert got.data == b"".join(pieces)
    assert not [n for n in notes if "sent nothing" in n]


async def test_a_service_that_does_not_speak_the_framing_is_said_so_in_one_line() -> None:
    async def garbage(stream: trio.SocketStream) -> None:
        await stream.send_all(b"garbage garbage\r\n\r\n")
        await stream.aclose()

    def locators(direction: Direction, number: int) -> LiveStream:
        return LiveStream(LinkTraits("sse", payload="messages"))

    notes: list[str] = []
    async with trio.open_nursery() as nursery:
        port = await serve(nursery, garbage)
        config = ProxyConfig((LOOPBACK, port), locators=locators, log=notes.append)
        proxy = Proxy(config, Timeline())
        listening: int = await nursery.start(proxy.serve, LOOPBACK, 0)
        async with await trio.open_tcp_stream(LOOPBACK, listening) as client:
            await client.send_all(b"GET / HTTP/1.1\r\n\r\n")
            await read_all(client)
        with trio.fail_after(10):
            while proxy.active:
                await proxy.wait_closed_connection()
        nursery.cancel_scope.cancel()
    said = [n for n in notes if "does not speak" in n]
    assert said == [
        "connection 1: the service does not speak sse: PROTOCOL_ERROR: HTTP: illegal status "
        "line: bytearray(b'garbage garbage')"
    ]
