"""``tearline clients``: the conformance matrix of the client libraries agents use.

Runs the scenario library (or PATHs, a ``-k`` selection, at most ``--budget`` cases per
client) against every installed adapter of ``harness.adapters`` and writes
``clients.html`` and ``clients.json``. An adapter whose library is missing is skipped with a
one-line note saying what to install. See ``docs/clients.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness.cli.types import bounded_float, bounded_int
from harness.config.limits import MAX_DURATION_MS

EXIT_BAD_INPUT = 2
MAX_BUDGET = 1_000_000


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "clients", help="run the library against real client libraries (the conformance matrix)"
    )
    parser.add_argument(
        "paths",
        nargs="*",
        default=["scenarios"],
        metavar="PATH",
        help="scenario files or folders (default: scenarios)",
    )
    parser.add_argument("-k", dest="select", default="", metavar="EXPR", help="only these cases")
    parser.add_argument(
        "--client",
        action="append",
        default=None,
        metavar="NAME",
        help="only this adapter (repeatable; --list shows them)",
    )
    parser.add_argument(
        "--budget",
        type=bounded_int(1, MAX_BUDGET),
        default=None,
        metavar="N",
        help="at most N cases per client, taken in turn from each scenario family",
    )
    parser.add_argument("--jobs", "-j", type=bounded_int(1, 256), default=1)
    parser.add_argument("--in-flight", type=bounded_int(1, 1024), default=8, metavar="N")
    parser.add_argument(
        "--deadline-ms",
        type=bounded_float(0, MAX_DURATION_MS),
        default=None,
        metavar="MS",
        help="every case's deadline instead of its scenario's",
    )
    parser.add_argument(
        "--out",
        default="reports/clients",
        metavar="DIR",
        help="where clients.html and clients.json go (default reports/clients)",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the adapters and whether each is installed"
    )


def _fail(message: str) -> int:
    print(f"tearline clients: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _list() -> int:
    from harness.consumers.catalogue import ADAPTERS, missing_modules, version  # noqa: PLC0415

    for adapter in ADAPTERS:
        missing = missing_modules(adapter)
        state = f"not installed: {adapter.install}" if missing else version(adapter)
        speaks = "/".join(adapter.framings)
        print(f"{adapter.name:<16} {speaks:<10} {state}")
    return 0


def clients(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    from harness.cli.scenario import load_cases  # noqa: PLC0415
    from harness.config.issues import ScenarioError  # noqa: PLC0415
    from harness.matrix.grid import Matrix  # noqa: PLC0415
    from harness.matrix.page import counts_text  # noqa: PLC0415
    from harness.running.clients import (  # noqa: PLC0415 - trio, the runner: only when run
        ClientsRun,
        cases_for,
        installed,
        run_adapter,
        write,
    )
    from harness.scenario.selection import SelectionError  # noqa: PLC0415

    try:
        adapters, skipped = installed(args.client or ())
    except KeyError as err:
        return _fail(f"no adapter named {err.args[0]} (tearline clients --list)")
    for note in skipped:
        print(f"skipped {note.adapter}: {note.note}", file=sys.stderr)
    try:
        cases = load_cases(args.paths, args.select)
    except (ScenarioError, SelectionError) as err:
        return _fail(str(err))
    run = ClientsRun(args.budget, args.jobs, args.in_flight, args.deadline_ms)
    rows = []
    for adapter in adapters:
        picked = cases_for(adapter, cases, run.budget)
        if not picked:
            print(f"{adapter.name}: no selected case fits ({'/'.join(adapter.framings)})")
            continue
        row = run_adapter(adapter, picked, run)
        rows.append(row)
        print(
            f"{row.adapter} {row.version}: {len(picked)} cases in {row.elapsed_s:.1f} s: "
            f"{counts_text(row.totals)}",
            flush=True,
        )
    if not rows and not skipped:
        return _fail("no cases selected")
    matrix = Matrix(tuple(rows), tuple(skipped), ("tearline", *_argv()))
    out = write(matrix, args.out)
    print(f"matrix: {out / 'clients.html'}, {out / 'clients.json'}")
    return 0


def _argv() -> Sequence[str]:
    return sys.argv[1:]
