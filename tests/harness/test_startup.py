"""A case's deadline measures its consumer, not the consumer's start-up.

A consumer program's deadline starts when the proxy accepts its first connection; until then
the start-up bound applies, and passing it is a diagnosis of its own. The slow starts here are
made on trio's mock clock (it stands still unless a test moves it): the program waits on a FIFO
before it connects, and the test moves the clock past the deadline while it waits, so no test
depends on how fast this machine starts an interpreter.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import trio
import trio.testing

from harness.judging.results import CaseResult
from harness.running.case import run_case
from harness.scenario import Case
from tests.harness.conftest import PYTHON
from tests.harness.test_runner import ENVELOPE_SSE, scenario

#: consume with tearline's consumer program once a byte arrives on the FIFO ``argv[1]``
SLOW_START = (
    "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.read(fd, 1); "
    "os.execv(sys.executable, [sys.executable, '-m', 'harness.cli', 'consume', *sys.argv[2:]])"
)
#: say something on stderr, open the FIFO ``argv[1]`` (the test knows it started), then hang
NEVER_CONNECTS = (
    "import os, sys, time; print('importing a slow client library', file=sys.stderr, "
    "flush=True); os.open(sys.argv[1], os.O_RDONLY); time.sleep(60)"
)
#: connect, then hang with the connection open
CONNECTS_AND_HANGS = (
    "import socket, sys, time; s = socket.create_connection((sys.argv[1], int(sys.argv[2]))); "
    "print('connected', file=sys.stderr, flush=True); time.sleep(60)"
)
CONSUME = ["--framing", "{framing}", "--payload", "{payload}", "--records", "20"]
CONSUME += ["--chunk-records", "5", "--connect", "{host}:{port}", "--json"]


async def _run_with_fifo(case: Case, fifo: Path, startup_ms: float, jump_s: float) -> CaseResult:
    """Run ``case``; once its program has opened ``fifo`` (it has started, and has not
    connected), move the clock ``jump_s`` on, then write a byte to the FIFO."""
    results: list[CaseResult] = []

    async def run() -> None:
        results.append(await run_case(case, startup_ms=startup_ms))
        # a program that never opened the FIFO must not leave the writer below blocked
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))

    os.mkfifo(fifo)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        writer = await trio.to_thread.run_sync(os.open, fifo, os.O_WRONLY)
        await trio.testing.wait_all_tasks_blocked()  # what the program printed is read
        trio.lowlevel.current_clock().jump(jump_s)  # type: ignore[attr-defined]
        with contextlib.suppress(BrokenPipeError):  # the program was killed at the bound
            os.write(writer, b"g")
        os.close(writer)
    return results[0]


async def test_a_slow_start_does_not_count_against_the_deadline(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    fifo = tmp_path / "go"
    case = scenario(
        ENVELOPE_SSE,
        "{verdict: RESULT_VERIFIED, complete: true}",
        command=[PYTHON, "-c", SLOW_START, str(fifo), *CONSUME],
        extra="deadline_ms: 1000\n",
    )
    result = await _run_with_fifo(case, fifo, startup_ms=30000, jump_s=3.0)
    assert (result.outcome, result.diagnosis) == (
        "pass",
        "RESULT_VERIFIED, complete=True, 6 accepted",
    )
    assert result.startup_s == 3.0  # the start, three times the deadline, reported apart


async def test_a_program_that_never_connects_names_the_startup_bound(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    fifo = tmp_path / "go"
    case = scenario(
        ENVELOPE_SSE,
        "{verdict: RESULT_VERIFIED}",
        command=[PYTHON, "-c", NEVER_CONNECTS, str(fifo)],
        extra="deadline_ms: 1000\n",
    )
    result = await _run_with_fifo(case, fifo, startup_ms=5000, jump_s=6.0)
    assert (result.outcome, result.diagnosis, result.startup_s) == (
        "no_verdict",
        "I4: no verdict: consumer program did not connect within the start-up bound "
        "(5000 ms, --startup-ms); killed; stderr: 'importing a slow client library'",
        None,
    )


async def test_a_program_that_connects_and_hangs_is_cut_at_the_deadline() -> None:
    case = scenario(
        ENVELOPE_SSE,
        "{verdict: RESULT_VERIFIED}",
        command=[PYTHON, "-c", CONNECTS_AND_HANGS, "{host}", "{port}"],
        extra="deadline_ms: 500\n",
    )
    result = await run_case(case)
    assert (result.outcome, result.diagnosis) == (
        "no_verdict",
        "I4: no verdict: no verdict within the case deadline (500 ms from its first "
        "connection); killed; stderr: 'connected'; the producer sent nothing on connection 1",
    )
    assert result.startup_s is not None
