"""Detection power measured by mutation: does the library catch a consumer with one small bug?

Run with ``python -m benchmarks.bench_mutation`` (``pip install -e '.[bench]'`` first, for
cosmic-ray). cosmic-ray makes the mutants: its operators, one mutation of one place at a time,
applied on disk and undone after the run, and its work database (``session.sqlite`` in the output
folder, readable with ``cr-report``). This script chooses which mutants run and what runs them.

What is mutated: the reference consumer's decoding side (the framing clients, the payload
verifiers and consumer-side checks, the session, the seed guards). Those modules also serve the
judge (the proxy decodes what the producer sent with the same codecs) and the reference producer,
so a mutant of ``reference_impl`` itself would bend the evidence along with the consumer. Each
mutant is therefore made in a copy of ``reference_impl`` under another name (``mref``), which only
the case's consumer imports: ``reference_impl.peers.consumer.run_consumer`` is replaced, in the
process that runs the cases, by one that runs ``mref``'s consumer and hands back its report.

For each mutant: the library's cases for the framing and payload its module serves (a framing
codec: that framing's cases; a payload: that payload's; the session and the guards: all), the
offset sweeps of ``scenarios/sweeps/`` one case in ``--stride``. A mutant is killed when a case
that the unmutated copy passes does not pass (confirmed by running that case once more), timed
out when the run passes ``--timeout``, crashed when the cases could not even start (the copy
does not import); otherwise it survived, and its diff is printed. Every
survivor is either argued equivalent in ``benchmarks/mutation_equivalents.toml`` or a gap, which
a new scenario must close.

The sample: every mutation cosmic-ray's operators make in those modules, without the ones in a
type annotation (never evaluated: ``from __future__ import annotations``) or in code the
consumer never runs (a producer's encoder, a server codec), ``--sample`` of them drawn with
``--seed``; ``--full`` runs them all. ``--workers`` mutants run at a time, each in its own copy
(most of a case is waiting on timeouts, so more workers than cores pay off).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import json
import os
import random
import re
import shutil
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "reference_impl"
MUTANT_PACKAGE = "mref"
BASELINE = "baseline.json"  # in a copy: the cases the unmutated copy fails
EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.toml")
LIBRARY = ROOT / "scenarios"
SWEEPS = "sweeps"

#: module (relative to reference_impl) -> the cases that exercise it: (framings, payloads);
#: () is every one
MODULES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "framing/length_prefixed.py": (("length-prefixed",), ()),
    "framing/ndjson.py": (("ndjson",), ()),
    "framing/sse.py": (("sse",), ()),
    "framing/sse_parser.py": (("sse",), ()),
    "framing/websocket.py": (("websocket",), ()),
    "framing/grpc.py": (("grpc",), ()),
    "payload/envelope.py": ((), ("envelope",)),
    "payload/tokens.py": ((), ("tokens",)),
    "payload/sides.py": ((), ()),
    "link/session.py": ((), ()),
    "framing_guard.py": ((), ()),
    "partial_stream_guard.py": ((), ("tokens",)),
}
#: a module whose cases are every case of the library
EVERY_CASE = "link/session.py"
#: top-level definitions of those modules that the consumer never runs (the producer's side)
PRODUCER_SIDE = frozenset(
    {
        "LengthPrefixedServer",
        "NdjsonServer",
        "SseServer",
        "_frame",
        "WebSocketServer",
        "_frame_header",
        "GrpcServer",
        "server",
        "monitor",
        "encode_frame",
        "EnvelopeSpec",
        "header_frame",
        "iter_chunks",
        "trailer_frame",
        "iter_frames",
        "iter_messages",
        "default_tokens",
        "TokenStreamSpec",
        "_message",
        "_openai",
        "_event",
        "_anthropic",
        "_generic",
    }
)


# -- the copy only the consumer imports --------------------------------------------------------


def make_copy(folder: Path) -> Path:
    """``reference_impl`` copied to ``folder/mref``, its imports renamed; returns ``folder``."""
    target = folder / MUTANT_PACKAGE
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"\breference_impl\b", MUTANT_PACKAGE, text), encoding="utf-8")
    return folder


def _convert(value: Any) -> Any:
    """A reference_impl dataclass value as the same class of the mutant copy."""
    import dataclasses  # noqa: PLC0415

    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    module_name = type(value).__module__.replace("reference_impl", MUTANT_PACKAGE, 1)
    module = importlib.import_module(module_name)
    cls = getattr(module, type(value).__name__)
    values = {f.name: _convert(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return cls(**values)


def use_mutant_consumer(overlay: Path) -> None:
    """Make every case's reference consumer the mutant copy's (before the runner is
    imported: it takes ``run_consumer`` by name)."""
    sys.path.insert(0, str(overlay))
    mutant = importlib.import_module(f"{MUTANT_PACKAGE}.peers.consumer")
    mutant_report = importlib.import_module(f"{MUTANT_PACKAGE}.report")

    import reference_impl.peers.consumer as reference  # noqa: PLC0415
    from reference_impl.link.consumer_config import ConsumerPolicy  # noqa: PLC0415
    from reference_impl.report import ConsumerReport, from_json  # noqa: PLC0415

    async def run_consumer(
        host: str, port: int, policy: ConsumerPolicy, tls: Any = None
    ) -> ConsumerReport:
        report = await mutant.run_consumer(host, port, _convert(policy), tls)
        return from_json(mutant_report.to_json(report))

    reference.run_consumer = run_consumer


# -- the mutants --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mutant:
    job_id: str
    module: str  # relative to reference_impl
    operator: str
    occurrence: int
    line: int
    definition: str  # the top-level definition it is in

    @property
    def label(self) -> str:
        operator = self.operator.removeprefix("core/")
        return f"{self.module}:{self.line} {self.definition} {operator}#{self.occurrence}"


@dataclass(slots=True)
class Outcome:
    mutant: Mutant
    result: str  # killed | survived | timeout | incompetent | no-test
    seconds: float
    killer: str = ""
    diff: str = ""
    key: str = ""
    flakes: list[str] = field(default_factory=list)


def _annotation_lines(tree: ast.Module) -> set[tuple[int, int]]:
    """(line, column) of every position inside a type annotation."""
    spans: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            spans.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            spans.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            spans.append(node.annotation)
    inside: set[tuple[int, int]] = set()
    for expr in spans:
        end_line = expr.end_lineno or expr.lineno
        end_col = expr.end_col_offset or 0
        for line in range(expr.lineno, end_line + 1):
            first = expr.col_offset if line == expr.lineno else 0
            last = end_col if line == end_line else 10_000
            inside.update((line, col) for col in range(first, last))
    return inside


def _top_level(tree: ast.Module) -> list[tuple[int, int, str]]:
    return [
        (node.lineno, node.end_lineno or node.lineno, node.name)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]


def enumerate_mutants(copy: Path, db_path: Path) -> list[Mutant]:
    """Every mutation cosmic-ray makes in ``MODULES`` of the copy, those the consumer runs."""
    from cosmic_ray.commands.init import init  # noqa: PLC0415
    from cosmic_ray.work_db import WorkDB, use_db  # noqa: PLC0415

    paths = [copy / MUTANT_PACKAGE / module for module in MODULES]
    with use_db(str(db_path), WorkDB.Mode.create) as db:
        init(paths, db, {})
        items = list(db.pending_work_items)
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in paths}
    skipped = {p: _annotation_lines(t) for p, t in trees.items()}
    tops = {p: _top_level(t) for p, t in trees.items()}
    found = []
    for item in items:
        spec = item.mutations[0]
        path = Path(spec.module_path)
        line, col = spec.start_pos
        if (line, col) in skipped[path]:
            continue
        name = next((n for a, b, n in tops[path] if a <= line <= b), "<module>")
        if name in PRODUCER_SIDE or name == "<module>":
            continue
        module = path.relative_to(copy / MUTANT_PACKAGE).as_posix()
        found.append(Mutant(item.job_id, module, spec.operator_name, spec.occurrence, line, name))
    found.sort(key=lambda m: (m.module, m.line, m.operator, m.occurrence))
    return found


def sample(mutants: Sequence[Mutant], size: int | None, seed: int) -> list[Mutant]:
    if size is None or size >= len(mutants):
        return list(mutants)
    chosen = random.Random(seed).sample(list(mutants), size)
    return sorted(chosen, key=lambda m: (m.module, m.line, m.operator, m.occurrence))


def survivor_key(mutant: Mutant, diff: str) -> str:
    """A mutant's name in the equivalents list: stable while its line stays as it is."""
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    digest = hashlib.sha256("\n".join(changed).encode()).hexdigest()[:10]
    return f"{mutant.module} {mutant.definition} {mutant.operator.removeprefix('core/')} {digest}"


def equivalents() -> dict[str, str]:
    """key -> why the mutant cannot be told from the original by any stream."""
    if not EQUIVALENTS.exists():
        return {}
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    return {entry["key"]: entry["why"] for entry in data.get("equivalent", [])}


# -- one mutant ----------------------------------------------------------------------------------


def run_mutant(mutant: Mutant, copy: Path, args: argparse.Namespace) -> Outcome:
    from cosmic_ray.mutating import mutate_and_test  # noqa: PLC0415
    from cosmic_ray.work_item import MutationSpec, WorkerOutcome  # noqa: PLC0415

    spec = MutationSpec(
        module_path=copy / MUTANT_PACKAGE / mutant.module,
        operator_name=mutant.operator,
        occurrence=mutant.occurrence,
        start_pos=(mutant.line, 0),
        end_pos=(mutant.line, 1),
    )
    command = (
        f"{sys.executable} -m benchmarks.bench_mutation cases --copy {copy} "
        f"--module {mutant.module} --stride {args.stride}"
    )
    started = time.monotonic()
    result = mutate_and_test([spec], command, args.timeout)
    seconds = time.monotonic() - started
    output = result.output or ""
    if result.worker_outcome is WorkerOutcome.NO_TEST:
        kind = "no-test"
    elif result.test_outcome is None or result.test_outcome.value == "incompetent":
        kind = "incompetent"
    elif output == "timeout":
        kind = "timeout"
    elif result.test_outcome.value == "killed" and "KILLED BY " not in output:
        kind = "crashed"  # the cases never ran (the mutant copy does not import, say)
    else:
        kind = result.test_outcome.value
    outcome = Outcome(mutant, kind, seconds, diff=result.diff or "")
    outcome.killer = _last_marked(output, "KILLED BY ")
    outcome.flakes = [
        line.removeprefix("FLAKE ") for line in output.splitlines() if line.startswith("FLAKE ")
    ]
    outcome.key = survivor_key(mutant, outcome.diff)
    return outcome


def _last_marked(output: str, mark: str) -> str:
    lines = [line.removeprefix(mark) for line in output.splitlines() if line.startswith(mark)]
    return lines[-1] if lines else ""


# -- the cases one mutant runs (a subprocess of the run) -----------------------------------------


def library_cases(module: str, stride: int) -> list[Any]:
    from harness.link.library import load_cases  # noqa: PLC0415
    from harness.running.execute import is_timed  # noqa: PLC0415

    framings, payloads = MODULES[module]
    chosen = []
    for folder in sorted(p for p in LIBRARY.iterdir() if p.is_dir() and any(p.glob("*.y*ml"))):
        cases = load_cases([str(folder)], "")
        if folder.name == SWEEPS:
            cases = cases[::stride]
        for case in cases:
            link = case.scenario.link
            if framings and link.framing not in framings:
                continue
            if payloads and link.payload not in payloads:
                continue
            chosen.append(case)
    return sorted(chosen, key=lambda c: is_timed(c.scenario) or c.scenario.exclusive)


def run_cases(args: argparse.Namespace) -> int:
    """Exit 1 at the first case the mutant fails (confirmed by a second run of it alone), 0
    when it passes them all; prints ``KILLED BY <case>: <diagnosis>``. With ``--list-failing``
    (the unmutated copy) run them all and print each failing case."""
    use_mutant_consumer(Path(args.copy))
    from harness.running.execute import RunSettings, run_all  # noqa: PLC0415

    cases = library_cases(args.module, args.stride)
    known = Path(args.copy, BASELINE)
    excluded = set(json.loads(known.read_text())) if known.exists() else set()
    chunk = len(cases) if args.list_failing else 48
    for start in range(0, len(cases), chunk):
        results = run_all(cases[start : start + chunk], RunSettings(jobs=1, in_flight=8))
        for case, result in zip(cases[start : start + chunk], results, strict=True):
            if result.passed or result.case_id in excluded:
                continue
            if args.list_failing:
                print(f"{result.case_id}: {result.outcome}: {result.diagnosis[:200]}")
                continue
            again = run_all([case], RunSettings(jobs=1, in_flight=1))[0]
            if again.passed:
                print(f"FLAKE {result.case_id}: {result.outcome}: {result.diagnosis[:200]}")
                continue
            print(f"KILLED BY {result.case_id}: {result.outcome}: {result.diagnosis[:300]}")
            return 1
    return 0


def baseline(copy: Path, stride: int) -> list[str]:
    """The cases the unmutated copy fails (never counted as kills): should be none. One run of
    every case (the session's set is every case of the library)."""
    import subprocess  # noqa: PLC0415

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "benchmarks.bench_mutation", "cases", "--copy", str(copy)]
    command += ["--module", EVERY_CASE, "--stride", str(stride), "--list-failing"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode:  # the unmutated copy cannot run the cases at all: no mutant can either
        raise SystemExit(f"bench_mutation: the cases do not run: {done.stderr.strip()[-600:]}")
    return [line for line in done.stdout.splitlines() if line]


# -- the run ---------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(ROOT)  # the test command runs ``benchmarks.bench_mutation`` from here
    copies = [make_copy(out / f"copy{k}") for k in range(args.workers)]
    started = time.monotonic()
    mutants = enumerate_mutants(copies[0], out / "session.sqlite")
    chosen = sample(mutants, None if args.full else args.sample, args.seed)
    if args.only:
        wanted = {line.strip() for line in Path(args.only).read_text().splitlines()}
        chosen = [m for m in mutants if m.label in wanted]
    failing = baseline(copies[0], args.stride)
    for line in failing:
        print(f"the unmutated copy fails {line} (not counted)")
    for copy in copies:
        (copy / BASELINE).write_text(json.dumps([line.split(": ", 1)[0] for line in failing]))
    print(
        f"{len(mutants)} mutants in the consumer's decoding side; running {len(chosen)} "
        f"(seed {args.seed}, {args.workers} at a time, sweeps 1 case in {args.stride})",
        flush=True,
    )
    queue = list(enumerate(chosen))
    results: list[Outcome | None] = [None] * len(chosen)

    def worker(copy: Path) -> None:
        while queue:
            try:
                index, mutant = queue.pop(0)
            except IndexError:
                return
            outcome = run_mutant(mutant, copy, args)
            results[index] = outcome
            print(
                f"{index + 1:4}/{len(chosen)} {outcome.result:11} {outcome.seconds:6.1f} s "
                f"{mutant.label} {outcome.killer[:90]}",
                flush=True,
            )

    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(worker, copies))
    done = [r for r in results if r is not None]
    report(done, time.monotonic() - started, out)
    return 0


def _row(name: str, mine: Sequence[Outcome], known: dict[str, str]) -> str:
    c = Counter(o.result for o in mine)
    equivalent = sum(1 for o in mine if o.result == "survived" and o.key in known)
    counts = f"{c['killed']:7} {c['timeout']:7} {c['survived']:8} {equivalent:7}"
    return f"{name:28} {len(mine):7} {counts}"


def report(outcomes: Sequence[Outcome], seconds: float, out: Path) -> None:
    """The table (per module: killed, timed out, survived, of which argued equivalent), then
    every survivor with its diff."""
    known = equivalents()
    print(f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {seconds / 60:.1f} min")
    print(
        f"{'module':28} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} {'equiv.':>7}"
    )
    for module in MODULES:
        mine = [o for o in outcomes if o.mutant.module == module]
        if mine:
            print(_row(module, mine, known))
    print(_row("all", outcomes, known))
    other = Counter(o.result for o in outcomes if o.result not in ("killed", "timeout", "survived"))
    if other:
        print(f"not run: {dict(other)}")
    for outcome in (o for o in outcomes if o.result == "survived"):
        why = known.get(outcome.key)
        print(f"\nsurvived: {outcome.mutant.label}\n  key: {outcome.key}")
        print(f"  equivalent: {why}" if why else "  NOT CLASSIFIED (a gap, or argue it equivalent)")
        print("\n".join("  " + line for line in outcome.diff.splitlines()[1:]))
    for outcome in (o for o in outcomes if o.flakes):
        print(f"\nflaky on {outcome.mutant.label}: {'; '.join(outcome.flakes)}")
    (out / "results.json").write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    unexplained = sum(1 for o in outcomes if o.result == "survived" and o.key not in known)
    print(f"\n{unexplained} survivors not classified; results in {out / 'results.json'}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    cases = sub.add_parser("cases", help="run one mutant's cases (the test command)")
    cases.add_argument("--copy", required=True)
    cases.add_argument("--module", required=True, choices=sorted(MODULES))
    cases.add_argument("--stride", type=int, default=5)
    cases.add_argument("--list-failing", action="store_true")
    parser.add_argument("--sample", type=int, default=150)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--stride", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--only",
        default=None,
        metavar="FILE",
        help="run the mutants whose labels (as printed) this file lists, one a line",
    )
    parser.add_argument("--out", default=str(ROOT / "build" / "mutation"))
    args = parser.parse_args(argv)
    if args.command == "cases":
        return run_cases(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
