"""Legs copied in worker threads (``harness/proxy/threadcopy.py``): every byte in order and
counted, a stop from trio ends a thread whether it waits to read or to write, a reset source
and a broken destination end it as such, and the standalone proxy copies its unobserved,
unfaulted legs there (or in trio when no thread is free) without a byte of difference."""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Sequence
from typing import Any

import pytest
import trio
import trio.testing

from harness.control.events import ConnectionLog
from harness.evidence.timeline import Leg
from harness.faults.config import Fault
from harness.proxy import direction
from harness.proxy.direction import THREAD_AFTER_BYTES, THREAD_AFTER_READS
from harness.proxy.server import Proxy, ProxyConfig
from harness.proxy.threadcopy import ThreadCopy, ThreadLegs
from tests.harness.conftest import LOOPBACK, read_all, read_exactly, serve

PATTERN = bytes(range(256)) * 4096  # 1 MiB


def _copy(
    src: trio.socket.SocketType, dst: trio.socket.SocketType, read_bytes: int, **extra: Any
) -> ThreadCopy:
    counters = {"downstream": 0}, "downstream", Leg(1, "downstream")
    return ThreadCopy((src.fileno(), dst.fileno()), read_bytes, counters, **extra)


def _feeding() -> tuple[trio.SocketStream, trio.socket.SocketType]:
    """A pair: the test writes the stream, the copy reads the socket."""
    feed, src = trio.socket.socketpair()
    return trio.SocketStream(feed), src


def _fed() -> tuple[trio.socket.SocketType, trio.SocketStream]:
    """A pair: the copy writes the socket, the test reads the stream."""
    dst, out = trio.socket.socketpair()
    return dst, trio.SocketStream(out)


async def _close(*ends: trio.socket.SocketType | trio.SocketStream) -> None:
    for end in ends:
        if isinstance(end, trio.SocketStream):
            await end.aclose()
        else:
            end.close()


async def _receive(stream: trio.SocketStream, into: bytearray, size: int = -1) -> None:
    """Into ``into`` until EOF, or until it holds ``size`` bytes."""
    while len(into) != size and (data := await stream.receive_some(1 << 16)):
        into.extend(data)


async def test_every_byte_is_copied_in_order_and_counted() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    copy, got = _copy(src, dst, 4096), bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_receive, out, got)
        async with trio.open_nursery() as copying:
            copying.start_soon(ThreadLegs().run, copy)
            await feed.send_all(PATTERN)
            await feed.send_eof()
        # the thread held duplicates: the destination ends only when both let go
        dst.close()
    assert bytes(got) == PATTERN
    assert copy.read == {"downstream": len(PATTERN)} and copy.written.written == len(PATTERN)
    assert copy.writes >= len(PATTERN) // 4096  # no read is bigger than the buffer
    await _close(feed, src, out)


async def test_a_destination_that_reads_late_still_gets_every_byte() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    copy, got = _copy(src, dst, 1 << 18), bytearray()
    data = PATTERN * 4  # far more than the destination's buffers hold
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ThreadLegs().run, copy)
        nursery.start_soon(feed.send_all, data)
        await trio.testing.wait_all_tasks_blocked()  # the thread waits to write by now
        with trio.fail_after(10):
            await _receive(out, got, len(data))
        await feed.send_eof()  # the copy ends by itself
    assert bytes(got) == data
    await _close(feed, src, dst, out)


async def test_stop_ends_a_thread_waiting_to_read_or_to_write() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    idle, full = _copy(src, dst, 1 << 16), _copy(src, dst, 1 << 16)
    for copy, backlog in ((idle, b""), (full, PATTERN * 4)):
        ended: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(feed.send_all, backlog)

            async def run(copy: ThreadCopy = copy, ended: list[str] = ended) -> None:
                # (abandoned on a cancel: a stop that never comes fails the test, not hangs it)
                ended.append(await trio.to_thread.run_sync(copy.run, abandon_on_cancel=True))
                nursery.cancel_scope.cancel()  # (the backlog's sender waits for ever)

            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(5):
                copy.stop()
                await trio.sleep_forever()
        copy.close()
        assert ended == ["stopped"]
    assert full.written.written < len(PATTERN) * 4  # it was stopped with bytes still held
    await _close(feed, src, dst, out)


async def test_a_cancel_stops_the_thread_then_reaches_the_caller() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    copy, rescued = _copy(src, dst, 1 << 16), trio.Event()

    async def rescue() -> None:
        """Should the stop never reach the thread, end its source: a failure, not a hang."""
        await trio.sleep(5)
        rescued.set()
        await feed.send_eof()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(rescue)
        with trio.move_on_after(0.05) as scope:
            await ThreadLegs().run(copy)
        nursery.cancel_scope.cancel()
    assert scope.cancelled_caught and copy.stopping and not rescued.is_set()
    await _close(feed, src, dst, out)


async def test_a_change_of_the_faults_returns_the_leg_to_trio_with_no_byte_in_hand() -> None:
    """Idle, the thread returns at once; writing, it finishes the write first: what it read
    is all delivered, and what it did not read is still in the source."""
    feed, src = _feeding()
    dst, out = _fed()
    moved = False
    idle = _copy(src, dst, 1 << 16, changed=lambda: moved)
    async with trio.open_nursery() as nursery:
        ended: list[str] = []

        async def run(copy: ThreadCopy) -> None:
            ended.append(await trio.to_thread.run_sync(copy.run, abandon_on_cancel=True))

        nursery.start_soon(run, idle)
        await trio.testing.wait_all_tasks_blocked()
        moved = True
        idle.wake()
    idle.close()
    moved, data = False, PATTERN * 4
    busy, got = _copy(src, dst, 1 << 16, changed=lambda: moved), bytearray()

    async def run_then_close() -> None:
        await run(busy)
        dst.close()  # (the thread let go of its duplicate): the reader sees the end

    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed.send_all, data)
        nursery.start_soon(run_then_close)
        await trio.testing.wait_all_tasks_blocked()  # the thread waits to write
        moved = True
        busy.wake()
        with trio.fail_after(10):
            await _receive(out, got)  # room for the write it holds, then the end
        nursery.cancel_scope.cancel()  # (the feeder waits for ever)
    busy.close()
    assert ended == ["changed", "changed"]
    assert busy.read["downstream"] == busy.written.written == len(got) < len(data)
    assert bytes(got) == data[: len(got)]
    await _close(feed, src, dst, out)


async def test_bytes_that_come_with_a_change_are_left_for_the_new_faults() -> None:
    """A change seen only once the thread was woken by bytes: they are not copied."""
    feed, src = _feeding()
    dst, out = _fed()
    answers = iter([False])  # no change before the wait; one after it
    copy = _copy(src, dst, 1 << 16, changed=lambda: next(answers, True))
    await feed.send_all(b"new")
    assert await ThreadLegs().run(copy) == "changed"
    assert (copy.read, copy.written.written) == ({"downstream": 0}, 0)
    assert await src.recv(10) == b"new"
    await _close(feed, src, dst, out)


class _Seen:
    def __init__(self) -> None:
        self.read, self.written = bytearray(), bytearray()

    def observe(self, data: bytes) -> None:
        assert type(data) is bytes  # its own copy, never a view of the thread's buffer
        self.read += data

    def observe_written(self, data: bytes) -> None:
        self.written += data


async def test_a_watcher_sees_every_read_and_write_from_the_thread() -> None:
    feed, src = _feeding()
    dst, out = _fed()
    seen, got = _Seen(), bytearray()
    copy, ended = _copy(src, dst, 4096, watcher=seen), list[str]()

    async def run() -> None:
        ended.append(await ThreadLegs().run(copy))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_receive, out, got, len(PATTERN))
        nursery.start_soon(run)
        await feed.send_all(PATTERN)
        await feed.send_eof()
    assert ended == ["eof"]
    assert bytes(seen.read) == bytes(seen.written) == bytes(got) == PATTERN
    await _close(feed, src, dst, out)


async def _tcp_pair() -> tuple[trio.socket.SocketType, trio.socket.SocketType]:
    listener = trio.socket.socket()
    await listener.bind((LOOPBACK, 0))
    listener.listen()
    near = trio.socket.socket()
    await near.connect(listener.getsockname())
    far, _ = await listener.accept()
    listener.close()
    return near, far


async def test_a_reset_source_and_a_broken_destination_end_the_copy_as_such() -> None:
    peer, src = await _tcp_pair()
    dst, out = _fed()
    copy = _copy(src, dst, 1 << 16)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()  # an RST
    assert await trio.to_thread.run_sync(copy.run) == "rst"
    copy.close()
    feed, src2 = _feeding()
    await out.aclose()  # nobody reads the destination any more
    broken = _copy(src2, dst, 1 << 16)
    await feed.send_all(b"x")
    assert await trio.to_thread.run_sync(broken.run) == "error"
    broken.close()
    await _close(src, dst, feed, src2)


async def _echo(stream: trio.SocketStream) -> None:
    async with stream:
        while data := await stream.receive_some(1 << 16):
            await stream.send_all(data)


async def standalone(
    nursery: trio.Nursery,
    threads: ThreadLegs | None = None,
    *,
    faults: Sequence[Fault] = (),
    live: bool = False,
) -> tuple[Proxy, trio.SocketStream]:
    """A standalone proxy (its connections recorded as counts, its legs free to move to
    threads) in front of an echo, and a client connected to it."""
    upstream = await serve(nursery, _echo)
    config = ProxyConfig((LOOPBACK, upstream), faults=faults)
    proxy = Proxy(config, store=ConnectionLog(), live=live)
    if threads is not None:
        proxy.threads = threads
    port = await nursery.start(proxy.serve, LOOPBACK, 0)
    return proxy, await trio.open_tcp_stream(LOOPBACK, port)


async def _through(threads: ThreadLegs) -> tuple[bytes, list[int]]:
    """2 MiB echoed through a standalone proxy, then a half-close; the bytes that came back
    and the threaded legs counted while the connection was open."""
    async with trio.open_nursery() as nursery:
        proxy, client = await standalone(nursery, threads)
        async with client:
            in_threads = []  # legs in threads after each ping: none until a leg has lived
            for _ in range(THREAD_AFTER_READS + 1):
                await client.send_all(b"ping")
                assert await read_exactly(client, 4) == b"ping"
                in_threads.append(threads.limiter.borrowed_tokens)

            async def send() -> None:
                await client.send_all(PATTERN * 2)
                await client.send_eof()  # the echo ends, and its end comes back

            nursery.start_soon(send)
            reads = await read_all(client)
            assert reads.end == "eof"
        while proxy.active:
            await proxy.wait_closed_connection()
        assert threads.limiter.borrowed_tokens == 0
        nursery.cancel_scope.cancel()
    # (after the last ping the legs in trio have copied, they move on as the test reads)
    return reads.data, [*in_threads[: THREAD_AFTER_READS - 1], in_threads[-1]]


async def test_the_standalone_proxy_copies_unwatched_legs_in_threads_or_in_trio() -> None:
    trio_first = [0] * (THREAD_AFTER_READS - 1)
    assert await _through(ThreadLegs()) == (PATTERN * 2, [*trio_first, 2])
    assert await _through(ThreadLegs(total=1)) == (PATTERN * 2, [*trio_first, 1])  # one: trio


async def test_a_leg_that_has_carried_a_mib_moves_to_a_thread_without_16_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bulk transfer need not wait for 16 reads (each of its reads costs trio more than a
    thread's set-up): with the reads out of the question, the bytes alone move both legs."""
    monkeypatch.setattr(direction, "THREAD_AFTER_READS", 1 << 40)
    threads = ThreadLegs()
    async with trio.open_nursery() as nursery:
        _, client = await standalone(nursery, threads)
        async with client:
            bulk = PATTERN * (2 * THREAD_AFTER_BYTES // len(PATTERN))
            nursery.start_soon(client.send_all, bulk)
            assert await read_exactly(client, len(bulk)) == bulk
            await client.send_all(b"ping")
            assert await read_exactly(client, 4) == b"ping"
            assert threads.limiter.borrowed_tokens == 2
        nursery.cancel_scope.cancel()


async def test_a_leg_that_gets_no_descriptor_for_a_thread_copies_in_trio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Out of descriptors (EMFILE) when a thread's would be made: nothing leaks, no thread runs,
    and every byte still goes through."""
    opened: list[int] = []
    closed: list[int] = []
    real_dup, real_close = os.dup, os.close

    def dup(fd: int) -> int:
        opened.append(copied := real_dup(fd))
        return copied

    def close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    def no_eventfd(*args: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "dup", dup)
    monkeypatch.setattr(os, "close", close)
    monkeypatch.setattr(os, "eventfd", no_eventfd)
    back, in_threads = await _through(ThreadLegs())
    assert back == PATTERN * 2 and in_threads == [0] * THREAD_AFTER_READS
    assert len(opened) == 4  # each leg tried once: two duplicates each, then it stayed in trio
    assert set(opened) <= set(closed)


async def test_a_reset_upstream_reaches_the_consumer_as_a_reset() -> None:
    async def resetter(stream: trio.SocketStream) -> None:
        await stream.receive_some(10)
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        upstream = await serve(nursery, resetter)
        proxy = Proxy(ProxyConfig((LOOPBACK, upstream)), store=ConnectionLog())
        port = await nursery.start(proxy.serve, LOOPBACK, 0)
        async with await trio.open_tcp_stream(LOOPBACK, port) as client:
            await client.send_all(b"go")
            with trio.fail_after(5):
                assert (await read_all(client)).end == "rst"
        nursery.cancel_scope.cancel()
