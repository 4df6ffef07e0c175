"""``tearline run | validate | list | schema``: the scenario side of the command."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from rich.console import Console

from harness.console import print_summary, progress_bar
from harness.execute import run_all
from harness.runner import stream_length
from harness.scenario import Case, ScenarioError, expand, json_schema, load_paths
from harness.selection import SelectionError, matches

EXIT_BAD_INPUT = 2


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="run scenario files and judge every case")
    run.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or folders")
    run.add_argument(
        "-k",
        dest="select",
        default="",
        metavar="EXPR",
        help="only cases whose id matches (words, and, or, not)",
    )
    run.add_argument("--jobs", "-j", type=int, default=1, help="worker processes")
    run.add_argument("--seed", type=int, default=None, help="replay with this seed")
    run.add_argument(
        "--report",
        default=None,
        metavar="DIR",
        help="write index.html, junit.xml, results.json (and pcaps) here",
    )
    run.add_argument("--pcap", choices=("failing", "all", "none"), default="failing")
    validate = sub.add_parser("validate", help="check scenario files without running them")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    listing = sub.add_parser("list", help="list the cases scenario files expand to")
    listing.add_argument("paths", nargs="+", metavar="PATH")
    listing.add_argument("-k", dest="select", default="", metavar="EXPR")
    sub.add_parser("schema", help="print the JSON Schema of scenario files")


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return EXIT_BAD_INPUT


def load_cases(paths: Sequence[str], select: str = "") -> list[Case]:
    """Load, validate and expand; raises ScenarioError / SelectionError."""
    cases = [case for s in load_paths(paths) for case in expand(s, stream_length)]
    return [case for case in cases if matches(select, case.case_id)] if select else cases


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=False)
    try:
        cases = load_cases(args.paths, args.select)
    except (ScenarioError, SelectionError) as err:
        return _fail(str(err))
    if not cases:
        return _fail("no cases selected")
    if args.jobs < 1:
        return _fail("--jobs: must be >= 1")
    started = time.monotonic()
    with progress_bar(console, len(cases)) as advance:
        results = run_all(cases, jobs=args.jobs, seed=args.seed, progress=advance)
    elapsed = time.monotonic() - started
    print_summary(console, results, elapsed)
    if args.report:
        from harness.reports import write_reports  # noqa: PLC0415 - scapy etc. only when asked

        written = write_reports(
            results,
            args.report,
            pcap=args.pcap,
            elapsed_s=elapsed,
            command=["tearline", *sys.argv[1:]],
        )
        console.print(f"reports: {written}")
    return 0 if all(r.outcome == "pass" for r in results) else 1


def validate(args: argparse.Namespace) -> int:
    try:
        cases = load_cases(args.paths)
    except ScenarioError as err:
        return _fail(str(err))
    print(f"ok: {len(cases)} cases")
    return 0


def list_cases(args: argparse.Namespace) -> int:
    try:
        cases = load_cases(args.paths, args.select)
    except (ScenarioError, SelectionError) as err:
        return _fail(str(err))
    for case in cases:
        print(f"{case.case_id}  seed={case.seed}")
    return 0


def schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2))
    return 0
