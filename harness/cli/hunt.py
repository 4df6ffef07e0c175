"""``tearline hunt``: search fault plans for one that breaks a consumer, shrink it, write it.

Progress goes to standard error; the found scenario file to ``-o FILE`` (or standard output).
Exit status: 0 nothing found within the budget, 1 the consumer failed (the file is written),
2 bad input (one line), 3 only the reference consumer failed plans (a harness or reference bug).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.types import bounded_int
from harness.config.limits import MAX_SEED
from reference_impl.framing import FRAMING_NAMES, FramingName
from reference_impl.payload import PayloadName, tokens
from reference_impl.report import accepted_total

if TYPE_CHECKING:
    from harness.hunt.diagnosis import Judged
    from harness.hunt.plan import Hunted
    from harness.scenario import Scenario
    from harness.search.engine import Event, Found, HuntResult

# harness.hunt (Hypothesis, trio, the runner) is imported by the command, so that every other
# ``tearline`` command starts as fast as before.

EXIT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_REFERENCE = 3
PAYLOADS = ("messages", "envelope", "tokens")
MAX_BUDGET = 100_000
#: print a progress line every this many cases (every case with --verbose)
PROGRESS_EVERY = 10

USAGE = """\
tearline hunt (--consumer COMMAND | --consumer-function MODULE:FUNCTION) --framing F --payload P
              [--profile NAME] [--budget N]
              [--seed S] [-o FILE] [--all] [--strict] [--shrink-budget N] [--max-faults N]
              [--timeout-ms MS] [--database DIR | --no-database] [-v]

Generate fault plans, run each against the consumer and the reference consumer, and shrink the
first failure to the smallest plan that still fails the same way; write it as a scenario file.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hunt = sub.add_parser(
        "hunt",
        help="search fault plans for one that breaks your consumer, and shrink it",
        # no usage line: a mistake is reported on one line (the synopsis is the description)
        usage=argparse.SUPPRESS,
        description=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hunted = hunt.add_mutually_exclusive_group(required=True)
    hunted.add_argument(
        "--consumer",
        metavar="COMMAND",
        help="the consumer program ({host}, {port}, {framing}, ... are replaced; "
        "docs/consumer-contract.md)",
    )
    hunted.add_argument(
        "--consumer-function",
        metavar="MODULE:FUNCTION",
        help="the consumer as a Python function, run warm (docs/python-consumers.md)",
    )
    hunt.add_argument("--framing", required=True, choices=[str(f) for f in FRAMING_NAMES])
    hunt.add_argument("--payload", required=True, choices=PAYLOADS)
    hunt.add_argument(
        "--profile", choices=tokens.PROFILES, default="openai", help="token profile (tokens)"
    )
    hunt.add_argument(
        "--budget",
        type=bounded_int(1, MAX_BUDGET),
        default=200,
        metavar="N",
        help="fault plans to try before giving up (default 200)",
    )
    hunt.add_argument(
        "--shrink-budget",
        type=bounded_int(0, MAX_BUDGET),
        default=200,
        metavar="N",
        help="plans run while shrinking one failure (default 200)",
    )
    hunt.add_argument(
        "--seed",
        type=bounded_int(0, MAX_SEED),
        default=None,
        help="the search's seed (default: a random one, printed)",
    )
    hunt.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write the scenario file here"
    )
    hunt.add_argument(
        "--all",
        action="store_true",
        dest="all_failures",
        help="go on after the first failure, for failures with other diagnoses",
    )
    hunt.add_argument(
        "--strict",
        action="store_true",
        help="hold the consumer to the reference's exact conclusion: a failure surfaced in "
        "other words (a non-strict grade, docs/grades.md) counts too",
    )
    hunt.add_argument(
        "--max-faults",
        type=bounded_int(1, 4),
        default=3,
        metavar="N",
        help="faults in one plan at most (default 3)",
    )
    hunt.add_argument(
        "--timeout-ms",
        type=bounded_int(100, 4000),
        default=500,
        metavar="MS",
        help="the consumer's incomplete-message timeout in plans with stalls, which last "
        "well below or well above it (default 500)",
    )
    where = hunt.add_mutually_exclusive_group()
    where.add_argument(
        "--database",
        type=Path,
        default=None,
        metavar="DIR",
        help="Hypothesis's example database (default: ~/.cache/tearline/hunt)",
    )
    where.add_argument(
        "--no-database",
        action="store_true",
        help="no example database: nothing found before is replayed first",
    )
    hunt.add_argument("-v", "--verbose", action="store_true", help="a line for every case")


def default_database() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tearline" / "hunt"


def _fail(message: str) -> int:
    print(f"tearline hunt: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Console:
    """Progress lines on standard error."""

    def __init__(self, budget: int, verbose: bool) -> None:
        self.budget, self.verbose = budget, verbose
        self.started = time.monotonic()
        self.failures = 0

    def event(self, event: Event) -> None:
        from harness.hunt.plan import describe  # noqa: PLC0415

        judged = event.judged
        plan = "" if judged is None else describe(judged.plan)
        seconds = time.monotonic() - self.started
        if event.kind == "case":
            if self.verbose and judged is not None:
                _say(f"  case {event.cases}: {judged.standing} {judged.key}  {plan}")
            elif event.cases % PROGRESS_EVERY == 0:
                _say(
                    f"  {event.cases}/{self.budget} cases, {self.failures} failures, "
                    f"{seconds:.1f} s"
                )
        elif event.kind == "failure" and judged is not None:
            self.failures += 1
            _say(f"  case {event.cases}: FAILURE {judged.key}: {plan}")
            _say(f"    {_one_line(judged.diagnosis, 160)}")
            _say("    shrinking ...")
        elif event.kind == "flaky" and judged is not None:
            _say(f"  case {event.cases}: {judged.key} did not happen again (timing): not counted")
        elif event.kind == "shrink":
            _say(f"    shrink step {event.shrink_steps}: {plan}")
        elif event.kind == "shrunk":
            _say(f"  shrunk in {event.shrink_steps} steps ({seconds:.1f} s): {plan}")
        elif event.kind == "reference" and judged is not None:
            _say(
                f"  case {event.cases}: the REFERENCE consumer fails this plan (a harness or "
                f"reference bug, not the consumer's): {plan}"
            )
            _say(f"    {_one_line(judged.diagnosis, 160)}")
        elif event.kind == "round":
            _say(f"  round {event.round}: hunting failures with other diagnoses")


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def scenario_name(key: str) -> str:
    """``hunted-violation-i1-i2`` from ``violation: I1, I2``."""
    slug = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")
    return f"hunted-{slug}"[:80].rstrip("-")


def found_scenario(found: Found, seed: int, consumer: Hunted) -> Scenario:
    from harness.hunt.plan import describe, scenario_of  # noqa: PLC0415

    judged = found.judged
    assert judged.expect is not None and judged.reference.report is not None
    report = judged.reference.report
    description = (
        f"{describe(found.plan)}: the reference consumer ends {report.verdict} "
        f"(complete={report.complete}, {accepted_total(report)} accepted); "
        f"{consumer.label} failed it ({found.key})."
    )
    return scenario_of(
        found.plan,
        judged.expect,
        seed=seed,
        name=scenario_name(found.key),
        description=description,
        source=f"tearline hunt seed {seed}",
    )


def _comment(result: HuntResult, seed: int, consumer: Hunted, output: str, strict: bool) -> str:
    lines = [f"Found by tearline hunt (seed {seed}) against: {consumer.label}"]
    if strict:
        lines.append(
            "Held --strict: a failure this consumer surfaced in its own words is graded "
            "non-strict by tearline run (docs/grades.md)"
        )
    for found in result.found:
        lines.append(
            f"{found.key}: case {found.cases_until}, shrunk in {found.shrink_steps} steps"
            + ("" if found.reproduced else " (the shrunk plan did not reproduce; a larger one)")
        )
        lines.append(f"  {_one_line(found.judged.diagnosis, 200)}")
    lines.append(f"Replay: tearline run {output}   (the reference consumer passes)")
    lines.append(f"        tearline run {output} {consumer.option}")
    return "\n".join(lines)


def write_found(
    result: HuntResult, seed: int, consumer: Hunted, output: str | None, *, strict: bool = False
) -> list[Scenario]:
    """Write the found scenarios to ``output`` (or standard output); checks the text loads."""
    from harness.hunt.scenario_file import dump  # noqa: PLC0415
    from harness.scenario import load_text  # noqa: PLC0415

    scenarios = [found_scenario(found, seed, consumer) for found in result.found]
    text = dump(scenarios, _comment(result, seed, consumer, output or "FILE", strict))
    load_text(text, output or "<stdout>")  # raises ScenarioError: a bug of ours, never silent
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
        _say(f"wrote {output}")
    return scenarios


def _clean_failure(judged: Judged, seconds: float) -> HuntResult:
    """The consumer fails the link with no fault at all: that is the smallest plan."""
    from harness.search.engine import Found, HuntResult  # noqa: PLC0415

    found = Found(judged, judged.plan, cases_until=0, shrink_steps=0, seconds=seconds)
    return HuntResult(found=[found], cases=0, runs=1, seconds=seconds)


def hunt(args: argparse.Namespace) -> int:
    try:
        from harness.hunt.diagnosis import Standing  # noqa: PLC0415
        from harness.search.engine import Hunt, HuntSettings, database_key  # noqa: PLC0415
        from harness.search.strategies import Space  # noqa: PLC0415
        from harness.search.trials import LiveCheck, hunted_consumer, preflight  # noqa: PLC0415
    except ImportError as err:  # hypothesis is not installed
        return _fail(f"hunt needs {err.name}: pip install {err.name}")

    consumer = hunted_consumer(args.consumer, args.consumer_function)
    if isinstance(consumer, str):
        return _fail(consumer)
    named = args.consumer or args.consumer_function
    space = Space(
        FramingName(args.framing),
        PayloadName(args.payload),
        args.profile,
        args.max_faults,
        float(args.timeout_ms),
    )
    seed = secrets.randbelow(2**32) if args.seed is None else args.seed
    database = None
    if not args.no_database:
        database = (args.database or default_database()) / database_key(named, space)
    check = LiveCheck(consumer, seed, strict=args.strict)
    started = time.monotonic()
    clean = preflight(check, space)
    if clean.problem:
        if clean.judged.standing in (Standing.REFERENCE, Standing.INVALID):
            _say(f"tearline hunt: {_one_line(clean.problem, 300)}")
            return EXIT_REFERENCE
        return _fail(clean.problem)
    where = "no database" if database is None else f"database {database}"
    _say(
        f"tearline hunt: {consumer.label} over {args.framing}/{args.payload}, seed {seed}, "
        f"budget {args.budget} ({where})"
    )
    console = Console(args.budget, args.verbose)
    if clean.judged.standing is Standing.FAILURE:
        _say(f"  the consumer fails the clean link: {_one_line(clean.judged.diagnosis, 160)}")
        result = _clean_failure(clean.judged, time.monotonic() - started)
    else:
        settings = HuntSettings(
            seed=seed,
            budget=args.budget,
            shrink_budget=args.shrink_budget,
            all_failures=args.all_failures,
            database=database,
        )
        result = Hunt(space, check.check, settings, console.event).run()
    _summary(result)
    if result.found:
        write_found(result, seed, consumer, args.output, strict=args.strict)
        return EXIT_FOUND
    return EXIT_REFERENCE if result.reference_problems else 0


def _summary(result: HuntResult) -> None:
    from harness.hunt.plan import describe  # noqa: PLC0415

    rate = result.runs / result.seconds if result.seconds else 0.0
    _say(
        f"{result.cases} cases ({result.runs} runs, {result.discarded} discarded, "
        f"{rate:.2f} runs/s) in {result.seconds:.1f} s: {len(result.found)} failures"
        + (", budget spent" if result.budget_spent and not result.found else "")
    )
    for found in result.found:
        _say(f"  {found.key}: {describe(found.plan)} ({len(found.plan.faults)} faults)")
    for judged in result.reference_problems:
        _say(f"  reference problem {judged.key}: {describe(judged.plan)}")
