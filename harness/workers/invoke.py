"""Run a case's consumer function in a warm worker: the runner's entry point.

``harness.running.case`` awaits ``run_python_consumer(link, host, port)`` when
``link.consumer.function`` is set. The function runs in a worker process of this process's
pool (``harness.workers.pool``): its import was paid once, when the worker started, and the
deadline counts from the moment the function is called. A function still running at the
deadline is killed with its worker (the next case gets a fresh one); one that raises
something unexpected, returns something that is not a message list, or kills its own
process gets a diagnosis of its own, and the run goes on.

``warm_python_consumer(link)`` starts (or takes) the worker ahead of time: called before the
case's deadline starts, the worker's start and the function's import are not counted at all.
"""

from __future__ import annotations

import math
from contextvars import ContextVar

import trio

from harness.consumers.linkinfo import link_info
from harness.consumers.outcome import from_wire
from harness.consumers.report import report_of
from harness.scenario import Link
from harness.workers.pool import Worker, WorkerGoneError, WorkerPool, default_pool
from reference_impl.report import ConsumerReport

#: without an explicit deadline and outside any deadline scope
DEFAULT_DEADLINE_S = 10.0
#: the function is stopped this long before an enclosing deadline, so that the case records
#: why (a hung function) instead of being cancelled with it
MARGIN_S = 0.05
#: how long a hung function's worker is given to die once killed
REAP_S = 5.0

#: a worker taken by ``warm_python_consumer`` for the same task's next call
_WARMED: ContextVar[Worker | None] = ContextVar("tearline_warmed_worker", default=None)


def _function(link: Link) -> str:
    ref = link.consumer.function
    if ref is None:
        raise ValueError("the link has no consumer function")
    return ref


async def warm_python_consumer(link: Link, *, pool: WorkerPool | None = None) -> str:
    """Have a ready worker for this case's function before its deadline starts; '' or why
    there is none (``run_python_consumer`` then reports the same)."""
    pool = pool or default_pool()
    worker = await pool.acquire(_function(link))
    if isinstance(worker, str):
        return worker
    previous = _WARMED.get()
    if previous is not None:
        pool.release(previous)
    _WARMED.set(worker)
    return ""


async def _worker_for(ref: str, pool: WorkerPool) -> Worker | str:
    warmed = _WARMED.get()
    if warmed is not None:
        _WARMED.set(None)
        if warmed.ref == ref and warmed.alive:
            return warmed
        pool.release(warmed)
    return await pool.acquire(ref)


def _budget(deadline_s: float | None) -> float:
    """Seconds the function gets from its call: ``deadline_s``, held inside any enclosing
    deadline (the case's) less ``MARGIN_S``."""
    now = trio.current_time()
    enclosing = trio.current_effective_deadline()
    inside = math.inf if math.isinf(enclosing) else max(0.0, enclosing - now - MARGIN_S)
    wanted = DEFAULT_DEADLINE_S if deadline_s is None and math.isinf(inside) else deadline_s
    return min(inside, math.inf if wanted is None else wanted)


async def run_python_consumer(
    link: Link,
    host: str,
    port: int,
    *,
    deadline_s: float | None = None,
    pool: WorkerPool | None = None,
    ca_file: str | None = None,
) -> tuple[ConsumerReport | None, str]:
    """Call the link's consumer function once against ``host:port``: (report, '') or (None,
    why there is none). ``deadline_s`` counts from the call (default: the enclosing deadline);
    ``ca_file``: the run's test CA, over TLS."""
    ref = _function(link)
    pool = pool or default_pool()
    worker = await _worker_for(ref, pool)
    if isinstance(worker, str):
        return None, worker
    budget = _budget(deadline_s)
    info = link_info(link, host, port, deadline_s=budget, ca_file=ca_file)
    worker.clear_output()
    try:
        with trio.move_on_after(budget) as scope:
            await worker.send({"link": info.to_dict()})
            raw = await worker.receive()
    except WorkerGoneError as err:
        tail = worker.output_tail()
        status = await pool.discard(worker)
        return None, (
            f"consumer worker for {ref} died during the call (exit status {status}; {err}); "
            f"output: {tail!r}"
        )
    except BaseException:  # cancelled with the case: the call is still running, stop it
        await pool.discard(worker)
        raise
    if scope.cancelled_caught:
        tail = worker.output_tail()
        # Shielded, so that the case's own deadline (MARGIN_S later, sooner than a loaded
        # machine reaps a process) cannot turn the hung function's diagnosis into a bare one.
        with trio.CancelScope(deadline=trio.current_time() + REAP_S, shield=True):
            await pool.discard(worker)
        said = f"; output: {tail!r}" if tail else ""
        return None, (
            f"consumer function {ref} did not return within {budget * 1000:.0f} ms of its "
            f"call; its worker was killed{said}"
        )
    worker.calls += 1
    try:
        outcome = from_wire(raw)
    except (KeyError, TypeError, ValueError) as err:
        await pool.discard(worker)
        return None, f"consumer worker for {ref} sent a malformed answer ({err!r})"
    pool.release(worker)
    return report_of(outcome)


async def prewarm(ref: str, count: int, *, pool: WorkerPool | None = None) -> str:
    """Start ``count`` idle workers for ``ref`` side by side; '' or why they cannot start."""
    pool = pool or default_pool()
    problems: list[str] = []

    async def one() -> None:
        worker = await pool.acquire(ref)
        if isinstance(worker, str):
            problems.append(worker)
        else:
            started.append(worker)

    started: list[Worker] = []
    async with trio.open_nursery() as nursery:
        for _ in range(max(0, count - pool.idle_count(ref))):
            nursery.start_soon(one)
    for worker in started:
        pool.release(worker)
    return problems[0] if problems else ""
