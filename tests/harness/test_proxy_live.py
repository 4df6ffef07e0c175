"""Faults changed while connections are open (the control API's mechanism, ``plans.py``):
a fault added reaches open connections at once, a fault removed hands on what it held, and no
byte is lost that a fault does not drop."""

from __future__ import annotations

import trio

from harness.faults import Kill, Latency, Stall
from harness.faults.position import Position
from harness.judging.timeline import Timeline
from harness.proxy.server import Proxy, ProxyConfig
from tests.harness.conftest import LOOPBACK, read_exactly, serve


async def _echo(stream: trio.SocketStream) -> None:
    async with stream:
        try:
            while data := await stream.receive_some(65536):
                await stream.send_all(data)
        except trio.BrokenResourceError:
            pass


async def _live_proxy(nursery: trio.Nursery) -> tuple[Proxy, trio.SocketStream]:
    upstream = await serve(nursery, _echo)
    proxy = Proxy(ProxyConfig((LOOPBACK, upstream)), Timeline(), live=True)
    port = await nursery.start(proxy.serve, LOOPBACK, 0)
    return proxy, await trio.open_tcp_stream(LOOPBACK, port)


async def test_a_fault_added_to_an_open_connection_applies_to_its_next_bytes() -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery)
        await client.send_all(b"before")
        assert await read_exactly(client, 6) == b"before"
        proxy.plan.set([("slow", Latency(delay_ms=200))])
        started = trio.current_time()
        await client.send_all(b"after")
        assert await read_exactly(client, 5) == b"after"
        assert trio.current_time() - started >= 0.2
        assert [f.name for f in proxy.timeline.faults] == ["latency"]
        nursery.cancel_scope.cancel()


async def test_removing_a_fault_hands_on_what_it_held() -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery)
        proxy.plan.set([("frozen", Stall(at=Position(offset=0), duration_ms=None))])
        await client.send_all(b"held")
        with trio.move_on_after(0.3) as waited:
            await client.receive_some(10)
        assert waited.cancelled_caught  # the stall holds the bytes
        proxy.plan.set([])
        assert await read_exactly(client, 4) == b"held"
        await client.send_all(b"free")
        assert await read_exactly(client, 4) == b"free"
        nursery.cancel_scope.cancel()


async def test_a_position_already_passed_fires_before_the_next_bytes() -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery)
        await client.send_all(b"xy")
        assert await read_exactly(client, 2) == b"xy"
        proxy.plan.set([("cut", Kill(at=Position(offset=1), how="fin"))])
        await client.send_all(b"z")
        assert await client.receive_some(10) == b""  # nothing after the cut: a FIN
        assert [(f.name, f.offset, f.detail) for f in proxy.timeline.faults] == [("kill", 1, "fin")]
        nursery.cancel_scope.cancel()
