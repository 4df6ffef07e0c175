"""``tearline clients``, the shell: run the library against every installed adapter and write
``clients.html`` and ``clients.json`` (the matrix itself is pure: ``matrix``, ``matrix_html``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from harness.consumers.catalogue import ADAPTERS, Adapter, missing_modules, version
from harness.judging.results import CaseResult
from harness.matrix import page as matrix_html
from harness.matrix.grid import Matrix, Row, Skipped, build_row, to_json
from harness.matrix.sampling import fits, for_function, within_budget
from harness.running.execute import RunSettings, run_all
from harness.scenario import Case
from harness.workers.invoke import prewarm
from harness.workers.pool import close_default_pool

Progress = Callable[[CaseResult], None]
#: MCP sessions of a client adapter run at once, at most
MCP_IN_FLIGHT = 2


@dataclass(frozen=True, slots=True)
class ClientsRun:
    """What ``tearline clients`` runs."""

    #: at most this many cases per client (spread over the families); None: all that fit
    budget: int | None = None
    jobs: int = 1
    in_flight: int = 8
    deadline_ms: float | None = None


def installed(names: Sequence[str] = ()) -> tuple[list[Adapter], list[Skipped]]:
    """The adapters to run (all, or those named) and a note for each whose library is
    missing. Unknown names raise ``KeyError`` naming them."""
    unknown = [n for n in names if n not in {a.name for a in ADAPTERS}]
    if unknown:
        raise KeyError(", ".join(unknown))
    chosen = [a for a in ADAPTERS if not names or a.name in names]
    ready, skipped = [], []
    for adapter in chosen:
        missing = missing_modules(adapter)
        if missing:
            note = f"not installed ({', '.join(missing)}): {adapter.install}"
            skipped.append(Skipped(adapter.name, note))
        else:
            ready.append(adapter)
    return ready, skipped


def cases_for(adapter: Adapter, cases: Sequence[Case], budget: int | None) -> list[Case]:
    fitting = [case for case in cases if fits(adapter, case)]
    return [for_function(case, adapter.function) for case in within_budget(fitting, budget)]


def run_adapter(
    adapter: Adapter, cases: Sequence[Case], run: ClientsRun, progress: Progress | None = None
) -> Row:
    """Run ``cases`` (already fitted) against one adapter; its matrix row."""
    started = time.monotonic()
    # the cases run in this process: start its workers first (an MCP client adapter runs in
    # a process of its own per case, harness/running/mcp_clients.py: none to warm)
    if run.jobs <= 1 and cases and adapter.payloads != ("mcp",):
        trio.run(prewarm, adapter.function, min(run.in_flight, len(cases)))
    in_flight = run.in_flight
    if adapter.payloads == ("mcp",):
        # each case starts a process that imports the SDK (most of a second of CPU): more than
        # two at once on a small machine eat the cases' deadlines before a byte is sent
        in_flight = min(in_flight, MCP_IN_FLIGHT)
    settings = RunSettings(run.jobs, in_flight, None, run.deadline_ms)
    try:
        results = run_all(cases, settings, progress=progress)
    finally:
        close_default_pool()
    elapsed = time.monotonic() - started
    return build_row(adapter.name, adapter.client, version(adapter), adapter.how, results, elapsed)


def write(matrix: Matrix, directory: str | Path) -> Path:
    """``clients.json`` and ``clients.html`` in ``directory`` (created if needed)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "clients.json").write_text(to_json(matrix) + "\n", encoding="utf-8")
    (out / "clients.html").write_text(matrix_html.render(matrix), encoding="utf-8")
    return out
