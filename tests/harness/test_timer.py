"""Precise waits (``harness/proxy/timer.py``): never before the deadline, in a thread and in
trio; a cancelled wait ends at once; the run's timer thread ends with the run; a test's clock
is its own. (How close to the deadline a wait ends is measured, not asserted: see
``benchmarks/bench_proxy_api.py``.)"""

from __future__ import annotations

import threading
import time

import trio
import trio.testing

from harness.proxy.timer import precise_thread, sleep_until, wait_until

TIMER_THREAD = "tearline-timer"


def _timer_threads() -> int:
    return sum(thread.name == TIMER_THREAD for thread in threading.enumerate())


def test_a_thread_sleeps_until_the_deadline_and_not_less() -> None:
    ended: list[tuple[float, float]] = []

    def sleeper() -> None:
        precise_thread()
        for delay_s in (0.0, 0.00003, 0.0004, 0.002):
            wake = time.perf_counter() + delay_s
            sleep_until(wake, time.perf_counter)
            ended.append((wake, time.perf_counter()))

    thread = threading.Thread(target=sleeper)
    thread.start()
    thread.join()
    assert len(ended) == 4
    assert all(now >= wake for wake, now in ended)


def test_trio_waits_end_after_their_deadlines_in_order_and_the_thread_with_the_run() -> None:
    woke: list[tuple[str, float, float]] = []

    async def waiter(name: str, delay_s: float) -> None:
        deadline = trio.current_time() + delay_s
        await wait_until(deadline)
        woke.append((name, deadline, trio.current_time()))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for name, delay_s in (("c", 0.0009), ("a", 0.0002), ("b", 0.0005), ("past", -1.0)):
                nursery.start_soon(waiter, name, delay_s)
        assert _timer_threads() == 1

    before = _timer_threads()
    trio.run(main)
    assert [name for name, _, _ in woke] == ["past", "a", "b", "c"]
    assert all(now >= deadline for _, deadline, now in woke)
    assert _timer_threads() == before


def test_a_cancelled_wait_ends_at_once() -> None:
    async def main() -> bool:
        with trio.move_on_after(0.001) as scope:
            await wait_until(trio.current_time() + 3600)
        return scope.cancelled_caught

    assert trio.run(main)


def test_a_mock_clock_keeps_its_own_time() -> None:
    async def main() -> float:
        start = trio.current_time()
        await wait_until(start + 0.0005)
        return trio.current_time() - start

    clock = trio.testing.MockClock(autojump_threshold=0)
    assert trio.run(main, clock=clock) == 0.0005
