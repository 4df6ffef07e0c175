"""Faults changed while connections are open (the control API's mechanism, ``plans.py``):
a fault added reaches open connections at once, a fault removed hands on what it held, and no
byte is lost that a fault does not drop."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio
import trio.testing

from harness.control.events import ConnectionLog
from harness.evidence.timeline import FaultRecord, Timeline
from harness.faults import Kill, Latency, Stall
from harness.faults.items import Chunk, Item
from harness.faults.position import Position
from harness.faults.stage import BaseStage
from harness.proxy.direction import THREAD_AFTER_READS, Connection, Leg
from harness.proxy.plans import FaultPlan, NamedFault
from harness.proxy.server import Proxy, ProxyConfig
from tests.harness.conftest import LOOPBACK, read_exactly, serve


async def _echo(stream: trio.SocketStream) -> None:
    async with stream:
        try:
            while data := await stream.receive_some(65536):
                await stream.send_all(data)
        except trio.BrokenResourceError:
            pass


#: how legs without faults copy: in trio (a case's proxy, whose timeline keeps everything) or
#: in threads (a long-running proxy's, whose connections are recorded as counts only)
COPYING = pytest.mark.parametrize("copying", ["trio", "thread"])


def _proxy(upstream: int, copying: str) -> Proxy:
    config = ProxyConfig((LOOPBACK, upstream))
    if copying == "thread":
        return Proxy(config, store=ConnectionLog(), live=True)
    return Proxy(config, Timeline(), live=True)


def _faults(proxy: Proxy) -> list[FaultRecord]:
    """The faults recorded, in the proxy's timeline or in its store's."""
    if isinstance(proxy.store, ConnectionLog):
        return [f for record in proxy.store.records() for f in record.timeline.faults]
    return proxy.timeline.faults


async def _live_proxy(nursery: trio.Nursery, copying: str) -> tuple[Proxy, trio.SocketStream]:
    proxy = _proxy(await serve(nursery, _echo), copying)
    port = await nursery.start(proxy.serve, LOOPBACK, 0)
    return proxy, await trio.open_tcp_stream(LOOPBACK, port)


@COPYING
async def test_a_fault_added_to_an_open_connection_applies_to_its_next_bytes(copying: str) -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery, copying)
        for _ in range(THREAD_AFTER_READS + 1):  # (a leg moves to a thread once it has lived)
            await client.send_all(b"before")
            assert await read_exactly(client, 6) == b"before"
        assert proxy.threads.limiter.borrowed_tokens == (2 if copying == "thread" else 0)
        proxy.plan.set([("slow", Latency(delay_ms=200))])
        started = trio.current_time()
        await client.send_all(b"after")
        assert await read_exactly(client, 5) == b"after"
        assert trio.current_time() - started >= 0.2
        assert [f.name for f in _faults(proxy)] == ["latency"]
        nursery.cancel_scope.cancel()


@COPYING
async def test_removing_a_fault_hands_on_what_it_held(copying: str) -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery, copying)
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


@COPYING
async def test_a_position_already_passed_fires_before_the_next_bytes(copying: str) -> None:
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery, copying)
        await client.send_all(b"xy")
        assert await read_exactly(client, 2) == b"xy"
        proxy.plan.set([("cut", Kill(at=Position(offset=1), how="fin"))])
        await client.send_all(b"z")
        assert await client.receive_some(10) == b""  # nothing after the cut: a FIN
        assert [(f.name, f.offset, f.detail) for f in _faults(proxy)] == [("kill", 1, "fin")]
        nursery.cancel_scope.cancel()


@COPYING
async def test_changes_while_a_leg_waits_to_write_lose_no_byte(copying: str) -> None:
    """A leg blocked on a full destination is not in a wait a change may end (``plans.Waits``):
    the bytes it holds reach the producer whole however often the faults change meanwhile."""
    sent = bytes(range(256)) * (8 * 4096)  # 8 MiB: more than both socket buffers hold
    release, done, got = trio.Event(), trio.Event(), bytearray()

    async def late_reader(stream: trio.SocketStream) -> None:
        await release.wait()
        while data := await stream.receive_some(1 << 20):
            got.extend(data)
        done.set()

    async with trio.open_nursery() as nursery:
        upstream = await serve(nursery, late_reader)
        proxy = _proxy(upstream, copying)
        port = await nursery.start(proxy.serve, LOOPBACK, 0)
        client = await trio.open_tcp_stream(LOOPBACK, port)

        async def send() -> None:
            await client.send_all(sent)
            await client.send_eof()

        nursery.start_soon(send)
        for faults in (
            [("a", Latency(delay_ms=0, direction="upstream"))],
            [],
            [("b", Latency(delay_ms=1, direction="upstream"))],
            [],
        ):
            await trio.testing.wait_all_tasks_blocked()  # the leg waits to write
            proxy.plan.set(faults)
        release.set()
        with trio.fail_after(30):
            await done.wait()
        assert bytes(got) == sent
        nursery.cancel_scope.cancel()


class _Scripted:
    """An endpoint whose reads are given and whose writes are kept. ``during(n)`` runs inside
    read ``n`` after its wait ended and before its bytes are handed back (the moment a cancel
    can no longer take them); every write passes a checkpoint first, where a cancel left
    pending would take its bytes."""

    def __init__(
        self, sock: trio.socket.SocketType, reads: list[bytes], during: Callable[[int], None]
    ) -> None:
        self.socket, self.reads, self.during, self.count = sock, reads, during, 0
        self.writes: list[bytes] = []
        self.ended = ""

    async def read_some(self, max_bytes: int) -> bytes:
        await trio.lowlevel.checkpoint()  # the wait
        self.during(self.count)
        self.count += 1
        return self.reads.pop(0)

    async def send_all(self, data: bytes) -> None:
        await trio.lowlevel.checkpoint()
        self.writes.append(data)

    def write_now(self, data: bytes) -> int:
        return 0  # every write goes through ``send_all`` and its checkpoint

    def reset(self) -> None:
        self.ended = "rst"

    async def close_write(self) -> None:
        self.ended = "eof"

    async def aclose(self) -> None:
        self.ended = self.ended or "closed"


class _Mapping(BaseStage):
    """A stage that rewrites every chunk's bytes (to see which chain carried them)."""

    def __init__(self, rewrite: Callable[[bytes], bytes]) -> None:
        self.rewrite = rewrite

    def pipe(self, item: Item, now: float) -> list[Item]:
        return [Chunk(self.rewrite(item.data), item.offset) if isinstance(item, Chunk) else item]


async def _leg_through_a_change(start: list[NamedFault], change: list[NamedFault]) -> _Scripted:
    """Run one leg over the reads abc, def, EOF; the faults change during the first read."""
    plan = FaultPlan(start, live=True)
    stages: dict[str, Callable[[bytes], bytes]] = {
        "upper": bytes.upper,
        "reverse": lambda b: b[::-1],
    }
    one, other = trio.socket.socketpair()
    src = _Scripted(one, [b"abc", b"def", b""], lambda n: plan.set(change) if n == 0 else None)
    dst = _Scripted(other, [], lambda n: None)
    conn = Connection(1, dst, src, 0.0)
    leg = Leg(
        conn,
        "downstream",
        src,
        dst,
        Timeline(),
        65536,
        1.0,
        plan=plan,
        build=lambda name, _: _Mapping(stages[name]),
    )
    with trio.fail_after(5):
        await leg.run()
    one.close()
    other.close()
    return dst


async def test_bytes_read_as_the_faults_change_go_to_the_new_faults() -> None:
    latency = Latency(delay_ms=0)
    copied = await _leg_through_a_change([], [("upper", latency)])
    assert (copied.writes, copied.ended) == ([b"ABC", b"DEF"], "eof")
    chained = await _leg_through_a_change([("upper", latency)], [("reverse", latency)])
    assert (chained.writes, chained.ended) == ([b"cba", b"fed"], "eof")


@COPYING
async def test_a_leg_whose_faults_are_all_removed_copies_again(
    copying: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the last fault of a leg is gone the leg leaves its chain for the plain copy (and,
    on a long-running proxy, the copy's thread): a removed toxic costs the round trip
    nothing more."""
    copies: list[str] = []
    plain_copy = Leg.copy

    async def counted(leg: Leg) -> tuple[bool, Item | None]:
        copies.append(leg.direction)
        return await plain_copy(leg)

    monkeypatch.setattr(Leg, "copy", counted)
    async with trio.open_nursery() as nursery:
        proxy, client = await _live_proxy(nursery, copying)
        await client.send_all(b"a")
        assert await read_exactly(client, 1) == b"a"
        proxy.plan.set([("slow", Latency(delay_ms=1))])
        await client.send_all(b"b")
        assert await read_exactly(client, 1) == b"b"
        before = len(copies)
        proxy.plan.set([])
        for _ in range(THREAD_AFTER_READS + 1):
            await client.send_all(b"c")
            assert await read_exactly(client, 1) == b"c"
        assert sorted(copies[before:]) == ["downstream", "upstream"]
        if copying == "thread":
            assert proxy.threads.limiter.borrowed_tokens == 2
        nursery.cancel_scope.cancel()
