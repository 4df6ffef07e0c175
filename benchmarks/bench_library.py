"""Where the library's time goes: a case's phases, its CPU by layer, and the reports' share.

Run with ``python -m benchmarks.bench_library`` (``--every 10`` runs every tenth case of the
library; ``--every 1`` all of it). Three measurements, side by side in one run:

1. **Phases** (wall time per case): the library's cases (every ``--every``-th) in one process,
   8 in flight as ``tearline run`` runs them, each phase timed around the function that does it:
   deriving the link (``reference_link``), the link's set-up (producer and proxy started), the
   consumer (its run, until its verdict), the settle wait (the proxy recording how each leg
   ended: ``Proxy.wait_idle``, bounded by ``SETTLE_S``) and judging. Phases of cases in flight
   at once overlap, so they add up to more than the run's wall time.
2. **CPU by layer**: the same cases again under ``cProfile`` (``--jobs 1``), each function's own
   time summed by the package it is in, and the costliest functions.
3. **Reports**: the same results written as ``tearline run --report`` writes them, against the
   time the cases took (the goal: under 5 % of a 1,000-case run).

Every figure is a ratio or a share of a total measured in the same run; the load average is
printed, as other work on a shared machine inflates wall times (CPU less).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

from harness.artifacts.writer import write_reports
from harness.judging.results import CaseResult
from harness.link.library import load_cases
from harness.proxy.server import Proxy
from harness.running import assembly, case, execute
from harness.running.execute import RunSettings, run_all
from harness.scenario import Case

T = TypeVar("T")
PHASES = ("derive", "set-up", "consumer", "settle", "judge", "rest")


class Phases:
    """Wall time per phase, by case (one process: the cases' tasks interleave in trio)."""

    def __init__(self) -> None:
        self.took: dict[str, list[float]] = defaultdict(list)
        self.settle_bound_hit = 0

    def timed(self, name: str, fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        @wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> T:
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.took[name].append(time.perf_counter() - started)

        return wrapper

    def timed_sync(self, name: str, fn: Callable[..., T]) -> Callable[..., T]:
        @wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.took[name].append(time.perf_counter() - started)

        return wrapper


#: (where, name, phase, async): each function timed, as the module that calls it names it
TIMED: tuple[tuple[Any, str, str, bool], ...] = (
    (case, "reference_link", "derive", False),
    (case, "judge", "judge", False),
    (case, "run_link", "link", True),
    (execute, "run_case", "case", True),
    (assembly, "consume", "consumer", True),
    (Proxy, "wait_idle", "settle", True),
)


def patched(phases: Phases) -> Callable[[], None]:
    """Time the phases' functions; returns what puts them back."""
    saved = [(where, name, getattr(where, name)) for where, name, _, _ in TIMED]
    for where, name, phase, is_async in TIMED:
        wrap = phases.timed if is_async else phases.timed_sync
        setattr(where, name, wrap(phase, getattr(where, name)))

    def restore() -> None:
        for where, name, original in saved:
            setattr(where, name, original)

    return restore


def phase_table(phases: Phases, cases: int, wall_s: float) -> list[str]:
    took = phases.took
    per_case = {name: sum(took[name]) for name in ("derive", "consumer", "settle", "judge")}
    per_case["set-up"] = sum(took["link"]) - per_case["consumer"] - per_case["settle"]
    per_case["rest"] = (
        sum(took["case"]) - sum(took["link"]) - per_case["derive"] - per_case["judge"]
    )
    total = sum(took["case"])
    lines = [
        f"{cases} cases in {wall_s:.1f} s wall; the cases' own times add up to {total:.1f} s"
        f" ({total / wall_s:.1f} cases overlapped on average)",
        f"{'phase':<10} {'sum s':>8} {'share':>6} {'mean ms':>8} {'median ms':>10}",
    ]
    for name in PHASES:
        samples = took["link" if name == "set-up" else "case" if name == "rest" else name]
        median = (
            statistics.median(samples) * 1000
            if samples and name not in ("set-up", "rest")
            else float("nan")
        )
        lines.append(
            f"{name:<10} {per_case[name]:8.2f} {per_case[name] / total:6.1%}"
            f" {per_case[name] / cases * 1000:8.2f} {median:10.2f}"
        )
    bound = sum(1 for s in took["settle"] if s >= assembly.SETTLE_S * 0.99)
    lines.append(f"settle waits that reached the {assembly.SETTLE_S:g} s bound: {bound}")
    return lines


def layer_of(filename: str) -> str:
    """The package a function is in: ``harness/proxy``, ``trio``, ``(builtins)``."""
    parts = filename.replace(os.sep, "/").split("/")
    for root in ("harness", "reference_impl"):
        if root in parts:
            i = parts.index(root)
            return "/".join(parts[i : i + 2]) if len(parts) > i + 2 else root
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1]
    return "(builtins)" if filename.startswith("~") or filename == "" else "(stdlib)"


def cpu_table(profile: cProfile.Profile, cases: int, top: int) -> list[str]:
    stats = pstats.Stats(profile)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_layer: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, line, name), (_, _, tottime, _, _) in raw.items():
        by_layer[layer_of(filename)] += tottime
        rows.append((tottime, f"{layer_of(filename)}:{os.path.basename(filename)}:{line}:{name}"))
    total = sum(by_layer.values())
    lines = [f"profiled: {total:.2f} s in functions, {total / cases * 1000:.2f} ms a case"]
    lines += [
        f"  {layer:<28} {t:7.2f} s {t / total:6.1%}"
        for layer, t in sorted(by_layer.items(), key=lambda kv: -kv[1])[:16]
    ]
    lines.append("costliest functions (own time):")
    lines += [f"  {t:7.3f} s  {where}" for t, where in sorted(rows, reverse=True)[:top]]
    return lines


def sample(cases: Sequence[Case], every: int) -> list[Case]:
    return [c for i, c in enumerate(cases) if i % every == 0 and not c.scenario.exclusive]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=10, help="run every N-th case")
    parser.add_argument("--top", type=int, default=20, help="functions listed")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}")
    cases = sample(load_cases(["scenarios/"]), args.every)
    settings = RunSettings(jobs=1, in_flight=8)

    phases = Phases()
    restore = patched(phases)
    started = time.perf_counter()
    try:
        results: list[CaseResult] = run_all(cases, settings)
    finally:
        restore()
    wall = time.perf_counter() - started
    print("\n".join(phase_table(phases, len(cases), wall)))
    failed = [r.case_id for r in results if not r.passed]
    print(f"not passed: {len(failed)} {failed[:5]}")

    profile = cProfile.Profile()
    profiled_started = time.perf_counter()
    profile.enable()
    run_all(cases, settings)
    profile.disable()
    print(f"profiled run: {time.perf_counter() - profiled_started:.1f} s wall")
    print("\n".join(cpu_table(profile, len(cases), args.top)))

    with tempfile.TemporaryDirectory(prefix="tearline-bench-") as out:
        cpu0, writing = time.process_time(), time.perf_counter()
        write_reports(results, out, pcap="failing", elapsed_s=wall, command=["bench"])
        took, cpu = time.perf_counter() - writing, time.process_time() - cpu0
    print(
        f"reports: {took:.2f} s wall ({cpu:.2f} s CPU in this process) for {len(results)} cases:"
        f" {took / wall:.1%} of the run's {wall:.1f} s"
    )
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
