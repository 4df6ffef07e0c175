"""A leg's chain of fault stages in a thread of its own: ``threadcopy.py``'s loop with the
faults on the path.

In trio, a leg with a fault paid a scheduler pass and an epoll round per read, as the copy had:
a 0 ms latency added 46-77% to a 100-byte round trip whose pass-through copied in threads. The
stages are pure (``harness/faults/stage.py``), so a thread drives them as trio does
(``direction.Leg._chain_steps``): it reads the source while the chain accepts, feeds each read
and the time to the chain, polls the chain when a stage's timer is due, and writes what comes
out. What only trio carries out (a read boundary waits for the peer's reads, an end closes the
leg) is handed back: the thread returns with that item and all after it (``rest``), and the leg
goes on in trio with the same chain. So does the source's end: the tail of a stream (a latency
still holding bytes, then the end) is trio's.

The thread owns the chain while it runs: trio touches neither the stages nor the leg's watcher
(a live locator, which the stages consult) until the thread has returned. What the stages record
goes to the connection's timeline, which the two legs of a connection may record into at once
(``Timeline.thread_safe``).

Timers: ``poll(2)`` waits in whole milliseconds (CPython rounds up: a poll for 0.8 ms returned
0.28 ms late), so the thread polls until ``TIMER_SLACK_S`` before a timer and sleeps precisely
for the rest (``timer.sleep_until``: the thread's timer slack at 1 ns, the last 60 us on
the clock), which ends within tens of microseconds of the timer on an idle machine and,
unlike a ``sched_yield`` loop, does not hand the core to other processes on a loaded one. In
that last stretch the thread reads nothing, as trio's leg does.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Protocol, cast

from harness.evidence.timeline import Leg
from harness.faults.items import Chunk, Close, End, Heartbeat, Item
from harness.faults.stage import Chain
from harness.proxy.threadcopy import Ended, ThreadCopy, Watcher, drain
from harness.proxy.timer import precise_thread, sleep_until

#: how long before a stage's timer the thread stops polling and sleeps precisely instead
TIMER_SLACK_S = 0.001


class ChainWatcher(Watcher, Protocol):
    """What the thread tells a leg's watcher: reads, writes and the source's end."""

    def observe_end(self, how: str) -> None: ...


class ThreadChain(ThreadCopy):
    """One direction's chain, run by ``run`` in a worker thread (``stop`` and ``wake`` as for
    ``ThreadCopy``). Returns "handed" with ``rest`` set when an item needs trio, or once the
    source ended (``source_ended``; ``peer_reset`` if it reset)."""

    watcher: ChainWatcher | None  # (it is told of the source's end as well)

    def __init__(
        self,
        ends: tuple[int, int],
        read_bytes: int,
        counters: tuple[MutableMapping[str, int], str, Leg],
        chain: Chain,
        clock: Callable[[], float],
        *,
        watcher: ChainWatcher | None = None,
        changed: Callable[[], bool] = lambda: False,
    ) -> None:
        super().__init__(ends, read_bytes, counters, watcher=watcher, changed=changed)
        self.chain, self.clock = chain, clock
        #: the first item only trio can carry out, and everything after it
        self.rest: list[Item] = []
        self.source_ended = False
        self.peer_reset = False

    def _loop(self) -> Ended:
        chain, clock, changed = self.chain, self.clock, self.changed
        precise_thread()
        buffer = bytearray(self.read_bytes)
        reading, idle = self._poll_set(self.src), self._poll_set()
        while True:
            if self.stopping:
                return "stopped"
            if changed():
                return "changed"
            now = clock()
            wake = chain.wake_at
            if wake is not None and wake <= now:
                items = chain.poll(now)
            elif wake is not None and wake - now < TIMER_SLACK_S:
                sleep_until(wake, clock)  # the last stretch before a timer (module docstring)
                continue
            else:
                accepting = chain.accepting  # (a stall, a throttle: hold the source)
                timeout_ms = None if wake is None else (wake - TIMER_SLACK_S - now) * 1000
                if not (reading if accepting else idle).poll(timeout_ms):
                    continue  # the timer's turn: no read to try (nor a wake-up to drain)
                if self.stopping or changed():
                    continue  # (said at the top)
                if not accepting:
                    drain(self._wake)
                    continue
                item = self._read_item(buffer)
                if item is None:
                    continue  # a timer, or the wake-up alone
                items = chain.pipe(item, clock())
            if (ended := self._write_items(items)) is not None:
                return ended
            if self.source_ended:
                return "handed"  # the tail of the stream is trio's (module docstring)

    def _read_item(self, buffer: bytearray) -> Item | None:
        """The next read as an item, as trio's leg makes it (``Leg._read_item``), or None."""
        got = self._read_into(buffer)
        if got is None:
            return None
        watcher = self.watcher
        if isinstance(got, str):
            self.source_ended = True
            self.peer_reset = got == "rst"
            if watcher is not None:
                watcher.observe_end(got)
            return Close("rst") if self.peer_reset else End()
        data = bytes(memoryview(buffer)[:got])  # the stages may keep it: not the buffer
        if watcher is not None:
            watcher.observe(data)
        offset = self.read[self.direction]
        self.read[self.direction] = offset + got
        return Chunk(data, offset)

    def _write_items(self, items: list[Item]) -> Ended | None:
        """Write the chain's bytes; "handed" at the first item that is not bytes. A hot loop,
        as trio's (``Writer.write_chunks``): a slicer's pieces are 64 bytes each."""
        watcher, write = self.watcher, self._write
        writes = size = 0
        try:
            for index, item in enumerate(items):
                kind = type(item)
                if kind is not Chunk and kind is not Heartbeat:
                    self.rest = items[index:]
                    return "handed"
                data = cast(Chunk | Heartbeat, item).data
                if (failed := write(data)) is not None:
                    return failed
                writes, size = writes + 1, size + len(data)
                if watcher is not None:
                    watcher.observe_written(data)
            return None
        finally:
            self.writes += writes
            self.written.written += size
