"""Waits to a deadline a fraction of a millisecond away, without spinning through it.

A latency stage's timer must end when it is due, not up to a millisecond later. trio's own
sleeps end in epoll, whose timeout CPython rounds up to the millisecond (a 10 ms latency took
10.3-10.6 ms), and a thread's ``poll(2)`` does the same. Spinning through the last stretch
(trio checkpoints; ``sched_yield`` in a thread) was exact on an idle machine, but on one
loaded to ten times its cores it was what made timers late: a process that spins looks busy to
the kernel's scheduler, so it was preempted in the middle of the spin and waited behind the
busy processes for their slices (a 10 ms latency came out 12-26 ms long through trio, 2 ms
late through a thread, whose yield handed the core away), where a process that sleeps is run
as soon as it wakes. So the last stretch is a sleep:

- ``sleep_until`` (in a thread): ``clock_nanosleep`` to ``SPIN_S`` before the deadline, with
  the thread's timer slack at 1 ns (``precise_thread``: the kernel's default lets a sleep end
  up to 50 us late; with it, about 40 us on this VM), then a bare loop on the clock until due
  (``SPIN_S`` is too short for a preemption to fall in; ``time.sleep(0)`` in the loop, which
  lets go of the GIL, cost 15 us a turn and made the wait that much late).
- ``wait_until`` (in trio): the same, in a thread that one trio run owns (a system task starts
  it and stops it when the run ends), which wakes the waiting task through trio's token.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from contextlib import suppress

import trio
from trio.testing import MockClock

#: ``prctl(PR_SET_TIMERSLACK, ...)``
PR_SET_TIMERSLACK = 29
#: the end of a precise wait spent on the clock rather than asleep (a sleep wakes some 40 us
#: late even with the slack at 1 ns); the GIL is held that long at most
SPIN_S = 0.00006

_LIBC: list[ctypes.CDLL | None] = []


def precise_thread() -> None:
    """Let the calling thread's sleeps end when they are due: its timer slack to 1 ns
    (Linux; elsewhere nothing changes)."""
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    libc = _LIBC[0]
    if libc is not None:
        with suppress(AttributeError):
            libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)


def sleep_until(wake: float, clock: Callable[[], float]) -> None:
    """In a thread set up by ``precise_thread``: until ``clock()`` reaches ``wake``."""
    if (rest := wake - clock() - SPIN_S) > 0:
        time.sleep(rest)
    while clock() < wake:
        pass


class _Timer:
    """One trio run's precise timer: a heap of (deadline on ``time.perf_counter``, order,
    event), and the thread that sets each event when it is due."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self.token = token
        self.heap: list[tuple[float, int, trio.Event]] = []
        self.order = itertools.count()
        self.changed = threading.Condition()
        self.stopping = False

    def add(self, at: float, event: trio.Event) -> None:
        with self.changed:
            entry = (at, next(self.order), event)
            heapq.heappush(self.heap, entry)
            if self.heap[0] is entry:
                self.changed.notify()

    async def serve(self) -> None:
        """The thread, for as long as the run lasts (a system task: cancelled at its end)."""
        thread = threading.Thread(target=self._loop, name="tearline-timer", daemon=True)
        thread.start()
        try:
            await trio.sleep_forever()
        finally:
            with self.changed:
                self.stopping = True
                self.changed.notify()
            thread.join()

    def _loop(self) -> None:
        precise_thread()
        while (due := self._next_due()) is not None:
            if due:
                try:
                    self.token.run_sync_soon(_set_all, due)
                except trio.RunFinishedError:
                    return

    def _next_due(self) -> list[trio.Event] | None:
        """Wait for the earliest deadline; the events due then ([] when an earlier deadline
        came meanwhile), or None once the timer stops."""
        with self.changed:
            while not self.heap and not self.stopping:
                self.changed.wait()
            if self.stopping:
                return None
            at = self.heap[0][0]
            if (rest := at - time.perf_counter() - SPIN_S) > 0:
                self.changed.wait(rest)
                return []
        sleep_until(at, time.perf_counter)
        with self.changed:
            now, due = time.perf_counter(), []
            while self.heap and self.heap[0][0] <= now:
                due.append(heapq.heappop(self.heap)[2])
            return due


def _set_all(events: list[trio.Event]) -> None:
    for event in events:
        event.set()


_RUN_TIMER: trio.lowlevel.RunVar[_Timer] = trio.lowlevel.RunVar("precise_timer")


async def wait_until(deadline: float) -> None:
    """trio's ``sleep_until(deadline)``, to within some 50 us instead of a millisecond and
    without spinning (for deadlines under a millisecond away: each is a wake-up through the
    run's timer thread)."""
    rest = deadline - trio.current_time()
    if rest <= 0:
        await trio.lowlevel.checkpoint()
        return
    if isinstance(trio.lowlevel.current_clock(), MockClock):
        await trio.sleep_until(deadline)  # a test's clock: its own time, not the thread's
        return
    try:
        timer = _RUN_TIMER.get()
    except LookupError:
        timer = _Timer(trio.lowlevel.current_trio_token())
        _RUN_TIMER.set(timer)
        trio.lowlevel.spawn_system_task(timer.serve)
    event = trio.Event()
    timer.add(time.perf_counter() + rest, event)
    await event.wait()  # (cancelled: the event is set later, for no one)
