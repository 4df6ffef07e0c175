"""The pass-through copy of one direction in a thread of its own, for legs nothing watches.

trio's copy loop pays a scheduler pass and an epoll round for every read: a 100-byte round
trip through it cost 2.4-2.6 x socat's with client, server and relay on one core. A thread
that sleeps in ``poll(2)`` on its source, reads and writes costs what socat costs
(``benchmarks/bench_proxy.py``: 0.9-1.0 x on one core), because the kernel wakes it and
nothing else runs between the read and the write. So a leg that no fault can reach and that
nobody observes (``Proxy._offloadable``: the standalone proxy without a control API, its
connections recorded as counts only) copies here, at most ``MAX_THREAD_LEGS`` at a time;
every other leg stays in trio, where faults can act on it.

The thread works on duplicates of the two sockets' descriptors, so the proxy may close its
own at any time: a descriptor number can never be reused under the thread, and the socket
itself ends (its FIN or RST goes out) when the thread lets go of it too. The thread stops
when the source ends, the destination breaks, or trio asks (an ``eventfd`` in its poll set):
the leg's connection is torn down, so what the thread held is dropped, as a cancelled write
drops it in trio. It updates two counters while it runs, each written by it alone: the bytes
read from the source (``Connection.read``) and those written (the timeline's ``Leg``), so the
control of a running proxy sees its open connections' traffic.
"""

from __future__ import annotations

import os
import select
from collections.abc import MutableMapping
from typing import Literal

import trio

from harness.judging.timeline import Leg

#: legs copied in threads at once (two per connection); the rest copy in trio
MAX_THREAD_LEGS = 64

Ended = Literal["eof", "rst", "error", "stopped"]

_READABLE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP
_WRITABLE = select.POLLOUT | select.POLLERR | select.POLLHUP


class ThreadCopy:
    """One direction's copy loop, run by ``run`` in a worker thread; ``stop`` from trio."""

    def __init__(
        self,
        src: int,
        dst: int,
        read_bytes: int,
        read: MutableMapping[str, int],
        direction: str,
        written: Leg,
    ) -> None:
        self.src, self.dst = os.dup(src), os.dup(dst)
        self.read_bytes = read_bytes
        self.read, self.direction, self.written = read, direction, written
        #: the writes made (each would be one segment of a timeline that keeps them)
        self.writes = 0
        self.stopping = False
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    def stop(self) -> None:
        """Ask the thread to stop at its next step (from trio's thread)."""
        self.stopping = True
        os.eventfd_write(self._wake, 1)

    def close(self) -> None:
        """Let go of the wake-up descriptor (from trio's thread, once ``run`` returned)."""
        os.close(self._wake)

    def run(self) -> Ended:
        """Copy until the source ends ("eof"), resets ("rst"), the destination breaks
        ("error") or ``stop`` was called ("stopped"). Closes the duplicates."""
        try:
            return self._copy()
        finally:
            os.close(self.src)
            os.close(self.dst)

    def _copy(self) -> Ended:
        # Reads go into one buffer: a fresh 256 KiB bytes object a read cost a worker thread
        # an mmap and a munmap (glibc trims a thread's arena as the read shrinks it), which
        # tripled the round trip.
        src, wake = self.src, self._wake
        buffer = bytearray(self.read_bytes)
        view = memoryview(buffer)
        readable = select.poll()
        readable.register(src, _READABLE)
        readable.register(wake, select.POLLIN)
        while True:
            readable.poll()
            if self.stopping:
                return "stopped"  # (only ``stop`` writes the wake-up)
            try:
                size = os.readv(src, (buffer,))
            except BlockingIOError:
                continue
            except OSError:
                return "rst"
            if not size:
                return "eof"
            self.read[self.direction] += size
            if not self._write(view[:size]):
                return "stopped" if self.stopping else "error"

    def _write(self, data: memoryview) -> bool:
        """All of ``data`` to the destination; False if it broke or ``stop`` came first."""
        view, dst, size = data, self.dst, len(data)
        writable: select.poll | None = None
        while view:
            try:
                view = view[os.write(dst, view) :]
            except BlockingIOError:
                if writable is None:
                    writable = select.poll()
                    writable.register(dst, _WRITABLE)
                    writable.register(self._wake, select.POLLIN)
                writable.poll()
                if self.stopping:
                    return False
            except OSError:
                return False
        self.writes += 1
        self.written.written += size
        return True


class ThreadLegs:
    """The proxy's budget of threaded legs (``MAX_THREAD_LEGS``)."""

    def __init__(self, total: int = MAX_THREAD_LEGS) -> None:
        self.limiter = trio.CapacityLimiter(total)

    def available(self) -> bool:
        return self.limiter.available_tokens >= 1

    async def run(self, copy: ThreadCopy) -> Ended:
        """``copy.run`` in a worker thread; a cancel of the caller stops the thread (and is
        raised once it has stopped). Call only when ``available()``: then nothing waits."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_stop_when_cancelled, copy)
                ended = await trio.to_thread.run_sync(
                    copy.run, limiter=self.limiter, abandon_on_cancel=False
                )
                nursery.cancel_scope.cancel()
            return ended
        finally:
            copy.close()


async def _stop_when_cancelled(copy: ThreadCopy) -> None:
    try:
        await trio.sleep_forever()
    finally:
        copy.stop()
