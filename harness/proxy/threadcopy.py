"""The pass-through copy of one direction in a thread of its own.

trio's copy loop pays a scheduler pass and an epoll round for every read: a 100-byte round
trip through it cost 2.4-2.6 x socat's with client, server and relay on one core. A thread
that sleeps in ``poll(2)`` on its source, reads and writes costs what socat costs
(``benchmarks/bench_proxy.py``), because the kernel wakes it and nothing else runs between
the read and the write. So a leg of a long-running proxy (its connections recorded as counts
only, plain TCP at both ends) copies here while no fault applies to it, at most
``MAX_THREAD_LEGS`` at a time; a leg with faults runs its chain in a thread of the same kind
(``threadchain.py``), or in trio.

The thread works on duplicates of the two sockets' descriptors, so the proxy may close its
own at any time: a descriptor number can never be reused under the thread, and the socket
itself ends (its FIN or RST goes out) when the thread lets go of it too. An ``eventfd`` in its
poll sets lets trio reach it: ``stop`` (the connection is torn down; what the thread holds is
dropped, as a cancelled write drops it in trio) and ``wake`` (the faults changed: the thread
returns before its next read, never with bytes in hand, and the leg goes on in trio). It
updates two counters while it runs, each written by it alone: the bytes read from the source
(``Connection.read``) and those written (the timeline's ``Leg``), so that the control API of a
running proxy sees its open connections' traffic; a leg's watcher (a live locator) is fed from
the thread, and trio touches it again only once the thread has returned.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable, MutableMapping
from typing import Literal, Protocol

import trio

from harness.evidence.timeline import Leg

#: legs copied in threads at once (two per connection); the rest copy in trio
MAX_THREAD_LEGS = 64

#: why a thread returned: its source ended or reset, its destination broke, the faults changed,
#: ``stop`` was called, or (a chain, ``threadchain.py``) it handed trio what only trio does
Ended = Literal["eof", "rst", "error", "changed", "stopped", "handed"]

_READABLE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP
_WRITABLE = select.POLLOUT | select.POLLERR | select.POLLHUP


class Watcher(Protocol):
    """What the thread tells a leg's watcher (``direction.Watcher``, of which it is a part)."""

    def observe(self, data: bytes) -> None: ...

    def observe_written(self, data: bytes) -> None: ...


class ThreadCopy:
    """One direction's copy loop, run by ``run`` in a worker thread; ``stop`` and ``wake``
    from trio. ``changed`` says (from the thread) whether the leg's faults changed: then the
    thread returns before its next read and the leg goes on in trio. A ``watcher`` sees every
    read and write, from the thread (trio does not touch it until ``run`` returned)."""

    def __init__(
        self,
        ends: tuple[int, int],
        read_bytes: int,
        counters: tuple[MutableMapping[str, int], str, Leg],
        *,
        watcher: Watcher | None = None,
        changed: Callable[[], bool] = lambda: False,
    ) -> None:
        self.src, self.dst, self._wake = _descriptors(ends)
        self.read_bytes = read_bytes
        self.read, self.direction, self.written = counters
        self.watcher, self.changed = watcher, changed
        #: the writes made (each would be one segment of a timeline that keeps them)
        self.writes = 0
        self.stopping = False
        self._writable: select.poll | None = None

    def stop(self) -> None:
        """Ask the thread to stop at its next step (from trio's thread)."""
        self.stopping = True
        os.eventfd_write(self._wake, 1)

    def wake(self) -> None:
        """The leg's faults changed (from trio's thread): the thread checks ``changed``."""
        os.eventfd_write(self._wake, 1)

    def close(self) -> None:
        """Let go of the wake-up descriptor (from trio's thread, once ``run`` returned)."""
        os.close(self._wake)

    def run(self) -> Ended:
        """Copy until the source ends ("eof"), resets ("rst"), the destination breaks
        ("error"), the faults change ("changed", no bytes in hand) or ``stop`` was called
        ("stopped"). Closes the duplicates."""
        try:
            return self._loop()
        finally:
            os.close(self.src)
            os.close(self.dst)

    def _loop(self) -> Ended:
        # Reads go into one buffer: a fresh 256 KiB bytes object a read cost a worker thread
        # an mmap and a munmap (glibc trims a thread's arena as the read shrinks it), which
        # tripled the round trip. The loop keeps its names local: it is the whole hop.
        watcher, changed, read_into = self.watcher, self.changed, self._read_into
        read, direction = self.read, self.direction
        buffer = bytearray(self.read_bytes)
        view = memoryview(buffer)
        readable = self._poll_set(self.src)
        while True:
            if changed():
                return "changed"  # (during the last write: its wake-up was drained there)
            readable.poll()
            if self.stopping:
                return "stopped"
            if changed():
                return "changed"  # even when bytes came with the wake-up: they are the new faults'
            size = read_into(buffer)
            if size is None:
                continue
            if isinstance(size, str):
                return size
            read[direction] += size
            if (failed := self._write(view[:size])) is not None:
                return failed
            self.writes += 1
            self.written.written += size
            if watcher is not None:
                # After the write, off the bytes' way: no fault acts on this leg, so the
                # watcher learns the read in time for the next one, when a fault may come.
                # Before the write it cost the round trip 5 us (the other leg's thread waits
                # for the GIL). It gets its own copy: it may keep what it is given.
                kept = bytes(view[:size])
                watcher.observe(kept)
                watcher.observe_written(kept)

    def _poll_set(self, *fds: int) -> select.poll:
        """A poll set of ``fds`` (read side) and the wake-up."""
        readable = select.poll()
        for fd in fds:
            readable.register(fd, _READABLE)
        readable.register(self._wake, select.POLLIN)
        return readable

    def _read_into(self, buffer: bytearray) -> int | Literal["eof", "rst"] | None:
        """One read of the source into ``buffer``: its size, "eof", "rst", or None when there
        was nothing to read (the wake-up alone woke the poll: ``changed`` says why)."""
        try:
            size = os.readv(self.src, (buffer,))
        except BlockingIOError:
            drain(self._wake)
            return None
        except OSError:
            return "rst"
        return size or "eof"

    def _write(self, data: bytes | memoryview) -> Ended | None:
        """Write ``data`` whole (the caller counts it); "error" if the destination broke,
        "stopped" if ``stop`` came while it waited for room (a change of the faults waits for
        the write)."""
        try:
            done = os.write(self.dst, data)  # the usual case: the buffer takes it whole
        except BlockingIOError:
            done = 0
        except OSError:
            return "error"
        if done != len(data) and not self._write_rest(memoryview(data)[done:]):
            return "stopped" if self.stopping else "error"
        return None

    def _write_rest(self, view: memoryview) -> bool:
        """The rest of a write, once the destination's buffer has room; False if it broke or
        ``stop`` came first (a change of the faults waits for the write)."""
        writable = self._writable
        if writable is None:  # (made once: a slicer's pieces may each wait for room)
            writable = self._writable = select.poll()
            writable.register(self.dst, _WRITABLE)
            writable.register(self._wake, select.POLLIN)
        while view:
            try:
                view = view[os.write(self.dst, view) :]
            except BlockingIOError:
                writable.poll()
                drain(self._wake)
                if self.stopping:
                    return False
            except OSError:
                return False
        return True


def _descriptors(ends: tuple[int, int]) -> tuple[int, int, int]:
    """The thread's own two sockets and its wake-up; all or none (``OSError``, EMFILE when the
    process is out of descriptors: the leg then copies in trio)."""
    made: list[int] = []
    try:
        made += [os.dup(ends[0]), os.dup(ends[1])]
        made.append(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))
    except OSError:
        for fd in made:
            os.close(fd)
        raise
    return made[0], made[1], made[2]


def drain(wake: int) -> None:
    """Clear the wake-up (else every poll returns at once); what it meant is in the flags."""
    with contextlib.suppress(BlockingIOError):
        os.eventfd_read(wake)


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
