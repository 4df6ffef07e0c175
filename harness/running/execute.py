"""Run many cases: concurrently inside a trio run, and across worker processes (``--jobs``).

Python runs one core per process, so ``--jobs N`` forks N worker processes, each running its
batches of cases in trio with ``in_flight`` cases at once (most of a case is waiting on sockets
and timeouts). Cases whose verdict hangs on wall-clock time (``timed``: stalls, latency,
throttles, slow consumers, delays, time positions, the consumer's pause) run one at a time per
worker, so a
loaded machine delays them no more than it must; a scenario that says ``exclusive: true`` runs
after all the others, alone. Results come back in case order whatever order they finish in.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import trio

from harness.config.limits import STARTUP_MS
from harness.judging.results import CaseResult
from harness.running.case import error_result, run_case
from harness.scenario import Case, Scenario

BATCH = 8

Progress = Callable[[CaseResult], None]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How a run schedules its cases (``tearline run`` options)."""

    #: worker processes
    jobs: int = 1
    #: cases in flight at once in each worker process
    in_flight: int = 8
    #: replay every case with this seed instead of its own
    seed: int | None = None
    #: every case's deadline, in milliseconds, instead of its scenario's
    deadline_ms: float | None = None
    #: the bound on each consumer's start-up, which its deadline does not count
    startup_ms: float = STARTUP_MS


def is_timed(scenario: Scenario) -> bool:
    """Does the verdict depend on wall-clock time, so that waiting for a core could change it?"""
    if any(fault.waits() for fault in scenario.faults):
        return True
    return scenario.link.consumer.pause_at_message is not None


async def _run_batch_async(cases: Sequence[Case], settings: RunSettings) -> list[CaseResult]:
    results: list[CaseResult | None] = [None] * len(cases)
    shared = trio.CapacityLimiter(max(1, settings.in_flight))
    timed = trio.CapacityLimiter(1)

    async def one(index: int) -> None:
        case = cases[index]
        async with timed if is_timed(case.scenario) else _NO_LIMIT, shared:
            try:
                results[index] = await run_case(case, settings.seed, startup_ms=settings.startup_ms)
            except Exception as err:  # one case's bug must not lose the whole run
                results[index] = error_result(case, settings.seed, f"harness bug: {err!r}")

    async with trio.open_nursery() as nursery:
        for index in range(len(cases)):
            nursery.start_soon(one, index)
    return [r for r in results if r is not None]


class _NoLimit:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_LIMIT = _NoLimit()


def run_batch(job: tuple[int, Sequence[Case], RunSettings]) -> tuple[int, list[CaseResult]]:
    start, cases, settings = job
    return start, trio.run(_run_batch_async, cases, settings)


def run_all(
    cases: Sequence[Case],
    settings: RunSettings | None = None,
    *,
    progress: Progress | None = None,
    before_alone: Callable[[], None] | None = None,
) -> list[CaseResult]:
    """Run every case; ``progress`` is called once per finished case (in the parent), and
    ``before_alone`` before the exclusive cases run alone in this process (what the caller
    does in the background must stop by then)."""
    settings = settings or RunSettings()
    cases = [_with_deadline(case, settings.deadline_ms) for case in cases]
    results: list[CaseResult | None] = [None] * len(cases)

    def collect(start: int, done: list[CaseResult], indices: Sequence[int]) -> None:
        for offset, result in enumerate(done):
            results[indices[start + offset]] = result
            if progress is not None:
                progress(result)

    shared = [i for i, case in enumerate(cases) if not case.scenario.exclusive]
    _run_indices(cases, shared, settings, collect)
    if before_alone is not None:
        before_alone()
    alone = dataclasses.replace(settings, jobs=1, in_flight=1)
    for index in (i for i, case in enumerate(cases) if case.scenario.exclusive):
        _run_indices(cases, [index], alone, collect)
    return [r for r in results if r is not None]


def _run_indices(
    cases: Sequence[Case],
    indices: Sequence[int],
    settings: RunSettings,
    collect: Callable[[int, list[CaseResult], Sequence[int]], None],
) -> None:
    indices = _spread_timed(cases, indices)
    picked = [cases[i] for i in indices]
    batches = [(i, picked[i : i + BATCH], settings) for i in range(0, len(picked), BATCH)]
    if settings.jobs <= 1 or len(batches) <= 1:
        for batch in batches:
            collect(*run_batch(batch), indices)
        return
    with multiprocessing.get_context("fork").Pool(settings.jobs) as pool:
        for start, done in pool.imap_unordered(run_batch, batches):
            collect(start, done, indices)


def _spread_timed(cases: Sequence[Case], indices: Sequence[int]) -> list[int]:
    """The indices reordered so that timed cases are spread over the batches (a sweep of
    stalls would otherwise fill one batch and run one after another in one worker)."""
    timed = [i for i in indices if is_timed(cases[i].scenario)]
    if not timed:
        return list(indices)
    rest = iter([i for i in indices if not is_timed(cases[i].scenario)])
    batches: list[list[int]] = [[] for _ in range(-(-len(indices) // BATCH))]
    for n, index in enumerate(timed):
        batches[n % len(batches)].append(index)
    for batch in batches:
        batch.extend(itertools.islice(rest, BATCH - len(batch)))
    return [i for batch in batches for i in batch]


def _with_deadline(case: Case, deadline_ms: float | None) -> Case:
    if deadline_ms is None:
        return case
    scenario = dataclasses.replace(case.scenario, deadline_ms=deadline_ms)
    return dataclasses.replace(case, scenario=scenario)
