"""Consumer functions run for real: warm workers, deadlines counted from the call, and a
diagnosis of its own for each way a function goes wrong, after which the run goes on."""

from __future__ import annotations

import os
import select
import subprocess
import sys

import pytest
import trio

from harness.judging.results import CaseResult, Grade, Outcome
from harness.running.case import run_case
from harness.running.execute import RunSettings, run_all
from harness.scenario import Case
from harness.workers.invoke import prewarm, run_python_consumer, warm_python_consumer
from harness.workers.pool import WorkerPool
from tests.harness.conftest import one_case

FUNCTIONS = "tests.consumers.functions"


def case(
    function: str,
    link: str = "{framing: sse, payload: messages}",
    *,
    faults: str = "[]",
    expect: str = "{complete: true}",
    deadline_ms: int = 10000,
) -> Case:
    ref = function if ":" in function else f"{FUNCTIONS}:{function}"
    link = link.removesuffix("}") + f", consumer: {{function: '{ref}'}}}}"
    return one_case(
        f"name: t\ndescription: d\nlink: {link}\nfaults: {faults}\nexpect: {expect}\n"
        f"deadline_ms: {deadline_ms}\n"
    )


@pytest.mark.parametrize(
    "function", ["codec_consumer", "list_consumer", "async_consumer", "async_generator_consumer"]
)
@pytest.mark.parametrize("framing", ["sse", "websocket", "grpc", "length-prefixed"])
async def test_a_correct_function_is_strict(function: str, framing: str) -> None:
    expect = "{complete: true}" if framing != "length-prefixed" else "{accepted_messages: 5}"
    result = await run_case(
        case(function, f"{{framing: {framing}, payload: messages}}", expect=expect)
    )
    assert (result.outcome, result.grade) == (Outcome.PASS, Grade.STRICT), result.diagnosis
    assert result.report is not None and len(result.report.accepted) == 5


async def test_a_cut_raises_with_the_messages_before_it() -> None:
    result = await run_case(
        case(
            "codec_consumer",
            "{framing: sse, payload: envelope, envelope: {records: 6, chunk_records: 2}}",
            faults="[{kind: kill, how: fin, at: {frame: 3, fraction: 0.5}}]",
            expect="{verdict: ERR_ZPARQL_STREAM_TRUNCATED, complete: false}",
        )
    )
    assert result.report is not None
    assert result.report.verdict == "RAISED:CodecError" and not result.report.complete
    assert result.grade is Grade.NON_STRICT


@pytest.mark.parametrize(
    ("function", "diagnosis"),
    [
        ("returns_int", "consumer function returned int, not an iterable of messages"),
        ("yields_dict", "consumer function handed on a dict as message 2"),
        ("type_error", "consumer function raised TypeError: can't concat str to bytes at "),
        ("exits", "consumer function raised SystemExit: 3 at "),
        (
            "dies",
            "died during the call (exit status 7; the worker closed its end); "
            "output: 'about to die'",
        ),
        ("nope", "module 'tests.consumers.functions' has no attribute 'nope'"),
        ("NOT_CALLABLE", "tests.consumers.functions:NOT_CALLABLE is not callable (it is int)"),
        ("no.such.module:f", "cannot import 'no.such.module': ModuleNotFoundError"),
    ],
)
async def test_each_way_to_go_wrong_has_its_own_diagnosis(function: str, diagnosis: str) -> None:
    result = await run_case(case(function))
    assert (result.outcome, result.grade) == (Outcome.NO_VERDICT, Grade.FAILED)
    assert diagnosis in result.diagnosis


def test_a_hung_function_is_killed_and_the_run_goes_on() -> None:
    cases = [case("hangs", deadline_ms=1500), case("codec_consumer")]
    hung, fine = run_all(cases, RunSettings(jobs=1, in_flight=2))
    assert hung.outcome is Outcome.NO_VERDICT
    assert "did not return within" in hung.diagnosis and "its worker was killed" in hung.diagnosis
    assert "output: 'hanging now'" in hung.diagnosis
    assert fine.outcome is Outcome.PASS


async def test_workers_are_reused_and_replaced_when_killed() -> None:
    pool = WorkerPool()
    link = case("pid").scenario.link
    first = [await run_python_consumer(link, "127.0.0.1", 9, pool=pool) for _ in range(3)]
    pids = {report.accepted[0].sha256 for report, _ in first if report is not None}
    assert len(pids) == 1 and pool.started == 1
    hang = case("hangs").scenario.link
    report, problem = await run_python_consumer(hang, "127.0.0.1", 9, deadline_s=0.3, pool=pool)
    assert report is None and "did not return within 300 ms" in problem
    assert pool.started == 2 and pool.idle_count() == 1
    pool.close()


async def test_the_deadline_counts_from_the_call_once_warm() -> None:
    slow = case("tests.consumers.slow_import:consume", deadline_ms=1000)
    cold = await run_case(slow)
    assert cold.outcome is Outcome.PASS  # the runner warms the worker before the deadline
    pool = WorkerPool()
    assert await warm_python_consumer(slow.scenario.link, pool=pool) == ""
    with trio.move_on_after(1.0):  # the case's deadline, started after the warm-up
        async with trio.open_nursery() as nursery:
            from harness.link.reference import link_spec, producer_config  # noqa: PLC0415
            from reference_impl.peers.producer import Producer  # noqa: PLC0415

            link = slow.scenario.link
            producer = Producer(producer_config(link, link_spec(link)))
            port = await nursery.start(producer.serve, "127.0.0.1", 0)
            report, problem = await run_python_consumer(link, "127.0.0.1", port, pool=pool)
            nursery.cancel_scope.cancel()
    assert problem == "" and report is not None and report.complete
    assert pool.started == 1
    pool.close()


async def test_prewarm_starts_idle_workers_side_by_side() -> None:
    pool = WorkerPool()
    assert await prewarm(f"{FUNCTIONS}:pid", 3, pool=pool) == ""
    assert (pool.started, pool.idle_count(f"{FUNCTIONS}:pid")) == (3, 3)
    assert "no attribute" in await prewarm(f"{FUNCTIONS}:nope", 1, pool=pool)
    pool.close()


ORPHAN = """
import sys, trio
from harness.workers.pool import default_pool
from harness.workers.invoke import prewarm
trio.run(prewarm, "tests.consumers.functions:pid", 1)
worker = default_pool()._idle["tests.consumers.functions:pid"][0]
print(worker.process.pid, flush=True)
import os; os._exit(0)  # no atexit: only the lifeline can stop the worker
"""


def test_a_worker_ends_with_the_process_that_started_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ORPHAN], capture_output=True, text=True, check=True, cwd=os.getcwd()
    )
    pid = int(done.stdout.split()[0])
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        readable, _, _ = select.select([fd], [], [], 10.0)
        assert readable, f"worker {pid} outlived its parent"
    finally:
        os.close(fd)


def _forked_pool_is_empty() -> bool:
    from harness.workers import pool  # noqa: PLC0415

    return pool._POOL is None


def test_a_forked_case_worker_starts_with_an_empty_pool() -> None:
    import multiprocessing  # noqa: PLC0415

    from harness.workers import pool  # noqa: PLC0415

    trio.run(prewarm, f"{FUNCTIONS}:pid", 1)
    try:
        assert pool._POOL is not None
        with multiprocessing.get_context("fork").Pool(1) as workers:
            assert workers.apply(_forked_pool_is_empty)
    finally:
        pool.close_default_pool()


def _results_ok(results: list[CaseResult]) -> bool:
    return all(r.ok for r in results)


def test_cases_run_through_forked_case_workers() -> None:
    cases = [case("codec_consumer") for _ in range(10)]
    results = run_all(cases, RunSettings(jobs=2, in_flight=4))
    assert _results_ok(results), [r.diagnosis for r in results if not r.ok]
