"""Run many cases: concurrently inside a trio run, and across worker processes (``--jobs``).

Python runs one core per process, so ``--jobs N`` forks N worker processes, each running its
batches of cases in trio with a few cases in flight at once (most of a case is waiting on
sockets and timeouts). Results come back in case order whatever order they finish in.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence

import trio

from harness.running.runner import CaseResult, error_result, run_case
from harness.scenario import Case

IN_FLIGHT_PER_PROCESS = 8
BATCH = 8

Progress = Callable[[CaseResult], None]


async def _run_batch_async(cases: Sequence[Case], seed: int | None) -> list[CaseResult]:
    results: list[CaseResult | None] = [None] * len(cases)
    limiter = trio.CapacityLimiter(IN_FLIGHT_PER_PROCESS)

    async def one(index: int) -> None:
        async with limiter:
            try:
                results[index] = await run_case(cases[index], seed)
            except Exception as err:  # one case's bug must not lose the whole run
                results[index] = error_result(cases[index], seed, f"harness bug: {err!r}")

    async with trio.open_nursery() as nursery:
        for index in range(len(cases)):
            nursery.start_soon(one, index)
    return [r for r in results if r is not None]


def run_batch(job: tuple[int, Sequence[Case], int | None]) -> tuple[int, list[CaseResult]]:
    start, cases, seed = job
    return start, trio.run(_run_batch_async, cases, seed)


def run_all(
    cases: Sequence[Case],
    *,
    jobs: int = 1,
    seed: int | None = None,
    progress: Progress | None = None,
) -> list[CaseResult]:
    """Run every case; ``progress`` is called once per finished case (in the parent)."""
    batches = [(i, cases[i : i + BATCH], seed) for i in range(0, len(cases), BATCH)]
    results: list[CaseResult | None] = [None] * len(cases)

    def collect(start: int, done: list[CaseResult]) -> None:
        for offset, result in enumerate(done):
            results[start + offset] = result
            if progress is not None:
                progress(result)

    if jobs <= 1 or len(batches) <= 1:
        for batch in batches:
            collect(*run_batch(batch))
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for start, done in pool.imap_unordered(run_batch, batches):
                collect(start, done)
    return [r for r in results if r is not None]
