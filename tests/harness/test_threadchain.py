"""A leg's chain of faults in a worker thread (``harness/proxy/threadchain.py``): what the
stages hand on is written in order and counted, their timers are kept, what only trio carries
out (a read boundary, an end) is handed back with everything after it, a stalled chain reads
nothing, and the standalone proxy moves a faulted leg there and back without a byte of
difference. Recording from threads loses no count (``ConnectionTimeline``)."""

from __future__ import annotations

import random
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

import pytest
import trio
import trio.testing

from harness.control.events import MAX_FAULTS_KEPT, ConnectionLog, connection_timeline
from harness.evidence.timeline import HowEnded, Leg
from harness.faults.config import Fault
from harness.faults.items import Boundary, Chunk, Close, End
from harness.faults.kill import Kill
from harness.faults.latency import Latency
from harness.faults.position import Position
from harness.faults.split import Split
from harness.faults.stage import Chain, StageContext
from harness.faults.stall import Stall
from harness.link.live import LinkTraits, LiveStream
from harness.proxy.direction import (
    MAX_THREAD_BACKOFF,
    THREAD_AFTER_BYTES,
    THREAD_AFTER_READS,
    _ChainRun,
)
from harness.proxy.threadchain import ThreadChain
from harness.proxy.threadcopy import ThreadLegs
from tests.harness.conftest import read_all, read_exactly
from tests.harness.test_threadcopy import (
    PATTERN,
    _close,
    _fed,
    _feeding,
    _receive,
    _tcp_pair,
    standalone,
)

Record = tuple[str, int | None, str]


class _Records:
    """A recorder and watcher both: what the stages recorded, and the source's end seen."""

    def __init__(self) -> None:
        self.faults: list[Record] = []
        self.ends: list[str] = []

    def fault(self, name: str, offset: int | None, detail: str, now: float) -> None:
        self.faults.append((name, offset, detail))

    def observe(self, data: bytes) -> None:
        pass

    def observe_written(self, data: bytes) -> None:
        pass

    def observe_end(self, how: str) -> None:
        self.ends.append(how)


def _chain(faults: Sequence[Fault], records: _Records) -> Chain:
    ctx = StageContext(
        direction="downstream",
        locator=LiveStream(LinkTraits()),
        recorder=records,
        rng=random.Random(0),
    )
    return Chain([fault.stage(ctx) for fault in faults])


def _thread(
    src: trio.socket.SocketType,
    dst: trio.socket.SocketType,
    faults: Sequence[Fault],
    *,
    changed: Callable[[], bool] = lambda: False,
) -> tuple[ThreadChain, _Records]:
    records = _Records()
    counters = {"downstream": 0}, "downstream", Leg(1, "downstream")
    clock = trio.lowlevel.current_clock().current_time
    chain = _chain(faults, records)
    ends = src.fileno(), dst.fileno()
    thread = ThreadChain(ends, 4096, counters, chain, clock, watcher=records, changed=changed)
    return thread, records


async def test_what_the_chain_hands_on_is_written_in_order_and_counted() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    thread, records = _thread(src, dst, [Latency(delay_ms=0)])
    got = bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_receive, out, got, len(PATTERN))

        async def send() -> None:
            await feed.send_all(PATTERN)
            await feed.send_eof()

        nursery.start_soon(send)
        assert await ThreadLegs().run(thread) == "handed"  # the end is trio's
    assert bytes(got) == PATTERN
    assert (thread.rest, thread.source_ended, thread.peer_reset) == ([End()], True, False)
    assert thread.read == {"downstream": len(PATTERN)} == {"downstream": thread.written.written}
    assert [name for name, _, _ in records.faults] == ["latency"] * thread.writes
    assert records.ends == ["eof"]
    await _close(feed, src, dst, out)


async def test_a_timer_is_kept_in_the_thread() -> None:
    """Never before it is due (the stage's clock is trio's: the same instants as in trio)."""
    feed, src = _feeding()
    dst, out = _fed()
    thread, records = _thread(src, dst, [Latency(delay_ms=30)])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ThreadLegs().run, thread)
        sent = trio.current_time()
        await feed.send_all(b"late")
        assert await read_exactly(out, 4) == b"late"
        assert trio.current_time() - sent >= 0.030
        nursery.cancel_scope.cancel()  # (stops the thread)
    ((name, offset, detail),) = records.faults
    assert (name, offset) == ("latency", 0) and float(detail.split()[1]) >= 30.0
    await _close(feed, src, dst, out)


async def test_a_read_boundary_is_handed_to_trio_with_what_follows() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    thread, records = _thread(src, dst, [Split(at=Position(offset=4))])
    await feed.send_all(b"abcdefgh")  # (before the thread: one read takes all eight)
    assert await ThreadLegs().run(thread) == "handed"
    assert thread.rest == [Boundary("split at 4"), Chunk(b"efgh", 4)]
    assert await out.receive_some(100) == b"abcd"  # only what came before the boundary
    assert (thread.written.written, thread.source_ended) == (4, False)
    assert records.faults == [("split", 4, "read boundary")]
    await _close(feed, src, dst, out)


async def test_the_source_ends_and_the_tail_of_the_stream_goes_to_trio() -> None:
    """EOF with a latency still holding bytes: nothing is lost, the stage holds it all; a
    reset source: its Close is handed on, marked as the peer's."""
    feed, src = _feeding()
    dst, out = _fed()
    thread, _ = _thread(src, dst, [Latency(delay_ms=60_000)])
    await feed.send_all(b"x")
    await feed.send_eof()
    assert await ThreadLegs().run(thread) == "handed"
    assert (thread.rest, thread.source_ended, thread.written.written) == ([], True, 0)
    assert thread.chain.stages[0].release(0.0) == [Chunk(b"x", 0), End()]
    peer, tcp = await _tcp_pair()
    reset, records = _thread(tcp, dst, [Latency(delay_ms=0)])
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()
    assert await ThreadLegs().run(reset) == "handed"
    assert (reset.rest, reset.peer_reset, records.ends) == ([Close("rst")], True, ["rst"])
    await _close(feed, src, dst, out, tcp)


async def test_a_stalled_chain_reads_nothing_and_writes_its_heartbeats() -> None:
    """A stall of 60 ms with a heartbeat every 20 ms: two beats from the thread, then the
    bytes it held; a stall for ever holds the source until a stop."""
    feed, src = _feeding()
    dst, out = _fed()
    beats = Stall(
        at=Position(offset=0), duration_ms=60, heartbeat="raw", heartbeat_text="<3",
        heartbeat_interval_ms=20,
    )  # fmt: skip
    thread, records = _thread(src, dst, [beats])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ThreadLegs().run, thread)
        await feed.send_all(b"held")
        assert await read_exactly(out, 8) == b"<3<3held"
        nursery.cancel_scope.cancel()
    assert [name for name, _, _ in records.faults] == ["stall"]
    frozen, _ = _thread(src, dst, [Stall(at=Position(offset=0), duration_ms=None)])
    await feed.send_all(b"more")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ThreadLegs().run, frozen)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert (frozen.stopping, frozen.read, frozen.writes) == (True, {"downstream": 0}, 0)
    assert await src.recv(10) == b"more"  # still in the source: the stall read nothing
    await _close(feed, src, dst, out)


async def test_a_change_of_the_faults_returns_before_the_next_read() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    answers = iter([False])  # no change before the wait; one after it
    thread, _ = _thread(src, dst, [Latency(delay_ms=0)], changed=lambda: next(answers, True))
    await feed.send_all(b"new")
    assert await ThreadLegs().run(thread) == "changed"
    assert (thread.read, thread.writes, thread.rest) == ({"downstream": 0}, 0, [])
    assert await src.recv(10) == b"new"
    await _close(feed, src, dst, out)


def test_a_chain_moves_to_a_thread_once_it_has_lived_and_later_after_boundaries() -> None:
    """16 reads, or a MiB carried; a paced slice hands every read back: each time, the reads
    before a thread double, and the bytes carried no longer count."""
    run = _ChainRun(writer=None, chain=Chain([]), pending=None)  # type: ignore[arg-type]
    firsts = []
    for boundaries in (0, 1, 2, MAX_THREAD_BACKOFF, MAX_THREAD_BACKOFF + 5):
        run.boundaries = boundaries
        firsts.append(next(n for n in range(1 << 20) if _wants(run, n, 0)))
    top = THREAD_AFTER_READS << MAX_THREAD_BACKOFF
    assert firsts == [THREAD_AFTER_READS, THREAD_AFTER_READS * 2, THREAD_AFTER_READS * 4, top, top]
    run.boundaries = 0
    assert (_wants(run, 1, THREAD_AFTER_BYTES - 1), _wants(run, 1, THREAD_AFTER_BYTES)) == (
        False,
        True,
    )
    run.boundaries = 1
    assert not _wants(run, 1, THREAD_AFTER_BYTES * 100)


def _wants(run: _ChainRun, reads: int, carried: int) -> bool:
    run.reads = reads
    return run.wants_thread(carried)


async def test_the_standalone_proxy_runs_a_faulted_leg_in_a_thread_and_ends_it_in_trio() -> None:
    """A 0 ms latency and a kill after the 20th echo: the downstream leg's chain moves to a
    thread once it has lived, every echo comes back whole and recorded, and the kill's FIN
    (trio's to carry out) ends the connection exactly at its offset."""
    pings = THREAD_AFTER_READS + 4
    faults = [Kill(at=Position(offset=6 * pings), how="fin"), Latency(delay_ms=0)]
    async with trio.open_nursery() as nursery:
        proxy, client = await standalone(nursery, faults=faults)
        async with client:
            in_threads = []
            for n in range(pings):
                await client.send_all(b"ping%02d" % n)
                assert await read_exactly(client, 6) == b"ping%02d" % n
                in_threads.append(proxy.threads.limiter.borrowed_tokens)
            assert (await read_all(client)).end == "eof"
        while proxy.active:
            await proxy.wait_closed_connection()
        nursery.cancel_scope.cancel()
    assert in_threads[THREAD_AFTER_READS + 1 : -1] == [2] * 2  # both legs, the chain's too
    assert proxy.threads.limiter.borrowed_tokens == 0
    assert isinstance(proxy.store, ConnectionLog)
    (record,) = proxy.store.records()
    timeline = record.timeline
    assert timeline.by_kind == {"latency": pings, "kill": 1}
    kills = [(f.name, f.offset) for f in timeline.faults if f.name == "kill"]
    assert kills == [("kill", 6 * pings)]
    end = timeline.end_of(1, "downstream")
    assert end is not None and (end.how, end.written) == (HowEnded.FIN, 6 * pings)


async def _echoes(client: trio.SocketStream, count: int) -> None:
    for n in range(count):
        await client.send_all(b"ping%02d" % n)
        assert await read_exactly(client, 6) == b"ping%02d" % n


async def test_a_fault_changed_while_its_chain_runs_in_a_thread_applies_at_once() -> None:
    """The thread returns, trio rebuilds the chain with the slower latency."""
    pings = THREAD_AFTER_READS + 2
    async with trio.open_nursery() as nursery:
        proxy, client = await standalone(nursery, faults=[Latency(delay_ms=0)], live=True)
        await _echoes(client, pings)
        assert proxy.threads.limiter.borrowed_tokens == 2  # the chain's leg and the copy
        proxy.plan.set([("slow", Latency(delay_ms=200))])
        started = trio.current_time()
        await _echoes(client, 1)
        assert trio.current_time() - started >= 0.2
        nursery.cancel_scope.cancel()
    assert isinstance(proxy.store, ConnectionLog)
    (record,) = proxy.store.records()
    assert record.timeline.by_kind == {"latency": pings + 1}


async def test_a_fault_removed_while_its_chain_holds_bytes_in_a_thread_hands_them_on() -> None:
    """A stall that fires after the pings, in the thread: it holds the next echo and reads
    nothing more; removed, it hands the echo on."""
    pings = THREAD_AFTER_READS + 2
    stall = Stall(at=Position(offset=6 * pings), duration_ms=None)
    async with trio.open_nursery() as nursery:
        proxy, client = await standalone(nursery, faults=[stall], live=True)
        await _echoes(client, pings)
        assert proxy.threads.limiter.borrowed_tokens == 2
        await client.send_all(b"held")
        with trio.move_on_after(0.2) as waited:
            await client.receive_some(10)
        assert waited.cancelled_caught  # the stall holds it
        proxy.plan.set([])
        with trio.fail_after(10):
            assert await read_exactly(client, 4) == b"held"
        nursery.cancel_scope.cancel()
    assert isinstance(proxy.store, ConnectionLog)
    (record,) = proxy.store.records()
    assert [(f.name, f.offset) for f in record.timeline.faults] == [("stall", 6 * pings)]


@pytest.fixture
def switching_often() -> Iterator[None]:
    """Threads switch every microsecond (a race in the recording has its chance)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("switching_often")
def test_two_threads_recording_into_one_connection_lose_no_count() -> None:
    timeline, each = connection_timeline(0.0), 20_000
    start = threading.Barrier(2)

    def record(direction: str) -> None:
        start.wait()
        for n in range(each):
            timeline.fault(0.0, 1, direction, "latency", n, "delayed 0.0 ms")

    threads = [threading.Thread(target=record, args=(d,)) for d in ("downstream", "upstream")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert timeline.by_kind == {"latency": 2 * each}
    assert (len(timeline.faults), timeline.faults_dropped) == (
        MAX_FAULTS_KEPT,
        2 * each - MAX_FAULTS_KEPT,
    )
