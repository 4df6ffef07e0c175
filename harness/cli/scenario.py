"""``tearline run | validate | list | schema``: the scenario side of the command.

``run``, ``validate`` and ``list`` read each file on its own: a file that does not load (or
expand) is reported as ``file:line: key.path: message`` on stderr and left out, the others are
run or listed, and the exit status is 2. Warnings about deprecated forms go to stderr too
(``validate --strict`` makes them errors).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.cli.linkargs import add_request_arguments
from harness.cli.shards import ShardInputError, add_run_arguments, select_shard
from harness.cli.types import bounded_float, bounded_int, readable_file, upstream
from harness.config.issues import ScenarioError
from harness.config.limits import MAX_DURATION_MS, MAX_SEED, STARTUP_MS
from harness.consumers.catalogue import runs_sessions
from harness.errors import FieldError
from harness.scenario.model import RequestConfig, TokensConfig
from harness.scenario.selection import SelectionError
from reference_impl.payload import tokens

if TYPE_CHECKING:
    from harness.config.issues import SchemaIssue
    from harness.judging.results import CaseResult
    from harness.scenario import Case, Library

# The runner, the proxy and rich are imported where used, so that `tearline consume` (which
# shares this parser) starts fast.

EXIT_BAD_INPUT = 2
MAX_JOBS = 256
MAX_IN_FLIGHT = 1024


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
    run.add_argument(
        "--jobs", "-j", type=bounded_int(1, MAX_JOBS), default=1, help="worker processes"
    )
    run.add_argument(
        "--in-flight",
        type=bounded_int(1, MAX_IN_FLIGHT),
        default=8,
        metavar="N",
        help="cases at once in each worker (default 8; timed cases run one at a time)",
    )
    run.add_argument(
        "--deadline-ms",
        type=bounded_float(0, MAX_DURATION_MS),
        default=None,
        metavar="MS",
        help="every case's deadline instead of its scenario's (a slow consumer program)",
    )
    run.add_argument(
        "--startup-ms",
        type=bounded_float(0, MAX_DURATION_MS),
        default=STARTUP_MS,
        metavar="MS",
        help=f"how long a consumer program may take to connect, which the deadline does not"
        f" count (default {STARTUP_MS:g})",
    )
    run.add_argument(
        "--seed", type=bounded_int(0, MAX_SEED), default=None, help="replay with this seed"
    )
    run.add_argument(
        "--report",
        nargs="?",
        const="reports",
        default=None,
        metavar="DIR",
        help="write index.html, junit.xml, results.json (and pcaps) in DIR (default: reports/)",
    )
    run.add_argument("--pcap", choices=("failing", "all", "none"), default="failing")
    run.add_argument(
        "--report-detail",
        choices=("failing", "all"),
        default=None,
        help="results.json: per-write segments of failing cases only (default) or of all"
        " (the default with --shard)",
    )
    add_run_arguments(run)
    add_target_arguments(run)
    add_request_arguments(run)
    validate = sub.add_parser("validate", help="check scenario files without running them")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.add_argument(
        "--strict",
        action="store_true",
        help="a warning about a deprecated form is an error (exit 2), for CI",
    )
    listing = sub.add_parser("list", help="list the cases scenario files expand to")
    listing.add_argument("paths", nargs="+", metavar="PATH")
    listing.add_argument("-k", dest="select", default="", metavar="EXPR")
    add_target_arguments(listing)
    sub.add_parser("schema", help="print the JSON Schema of scenario files")


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """Point the library at your own programs, and keep the scenarios that fit them."""
    group = parser.add_argument_group("your own link")
    group.add_argument(
        "--consumer",
        default=None,
        metavar="COMMAND",
        help="run this consumer program in every case ({host}, {port}, "
        "{framing}, {payload} are replaced); see docs/consumer-contract.md",
    )
    group.add_argument(
        "--consumer-function",
        default=None,
        metavar="MODULE:FUNCTION",
        help="run this Python function as the consumer in every case (warm, no program start);"
        " see docs/python-consumers.md",
    )
    group.add_argument(
        "--upstream",
        type=upstream,
        default=None,
        metavar="HOST:PORT",
        help="use your producer at HOST:PORT instead of the reference one (https://HOST:PORT: "
        "over TLS, its certificate verified)",
    )
    group.add_argument(
        "--upstream-ca",
        type=readable_file,
        default=None,
        metavar="FILE",
        help="with an https upstream: trust the CAs in this PEM file instead of the system's",
    )
    group.add_argument(
        "--upstream-insecure",
        action="store_true",
        help="with an https upstream: do not verify its certificate",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        help="TLS between the consumer and the proxy (a run CA, given to programs as "
        "{ca_file}) and, with the reference producer, between the proxy and it",
    )
    group.add_argument(
        "--framing",
        action="append",
        default=None,
        metavar="NAME",
        help="only scenarios over this framing (repeatable)",
    )
    group.add_argument(
        "--profile",
        action="append",
        default=None,
        metavar="NAME",
        choices=tokens.PROFILES,
        help="only token streams of this producer profile (repeatable; implies payload tokens)",
    )
    group.add_argument(
        "--payload",
        action="append",
        default=None,
        metavar="NAME",
        help="only scenarios carrying this payload (repeatable)",
    )


def retarget(
    case: Case, consumer: str | None, upstream: str | None, function: str | None = None
) -> Case:
    """The case run against the user's consumer (program or function) and/or producer."""
    link = case.scenario.link
    if consumer is not None:
        command = tuple(shlex.split(consumer))
        link = replace(link, consumer=replace(link.consumer, command=command, function=None))
    if function is not None:
        link = replace(link, consumer=replace(link.consumer, command=None, function=function))
    if upstream is not None:
        # your producer instead of whichever the scenario names (a replay's too)
        producer = replace(link.producer, upstream=upstream, replay=None, speed=1.0)
        link = replace(link, producer=producer)
    return replace(case, scenario=replace(case.scenario, link=link))


def with_tls(case: Case, tls: bool, upstream_ca: str | None, upstream_insecure: bool) -> Case:
    """The case with the TLS options of the command line (each only adds to the scenario's)."""
    link = case.scenario.link
    producer = link.producer
    if upstream_ca is not None or upstream_insecure:
        producer = replace(producer, upstream_ca=upstream_ca, upstream_insecure=upstream_insecure)
    link = replace(link, tls=link.tls or tls, producer=producer)
    return replace(case, scenario=replace(case.scenario, link=link))


def _tls_options(args: argparse.Namespace) -> tuple[bool, str | None, bool]:
    """``--tls``, ``--upstream-ca``, ``--upstream-insecure``; SelectionError when they clash."""
    tls = bool(getattr(args, "tls", False))
    ca = getattr(args, "upstream_ca", None)
    insecure = bool(getattr(args, "upstream_insecure", False))
    https = str(getattr(args, "upstream", None)).startswith("https://")
    if (ca is not None or insecure) and not https:
        raise SelectionError("--upstream-ca and --upstream-insecure need --upstream https://...")
    if ca is not None and insecure:
        raise SelectionError("give --upstream-ca or --upstream-insecure, not both")
    return tls, ca, insecure


def _fits(case: Case, args: argparse.Namespace) -> bool:
    link = case.scenario.link
    framings, payloads = getattr(args, "framing", None), getattr(args, "payload", None)
    profiles = getattr(args, "profile", None)
    config = link.payload_config
    profile = config.profile if isinstance(config, TokensConfig) else None
    return (
        (not framings or link.framing in framings)
        and (not payloads or link.payload in payloads)
        and (not profiles or profile in profiles)
    )


def _session_fits(case: Case, args: argparse.Namespace) -> bool:
    """An MCP session (payload mcp) runs tearline's MCP server and its own client: it takes
    no consumer program, upstream, TLS or request of the command line, and a
    ``--consumer-function`` only when that is an MCP client adapter (which runs no stream)."""
    session = case.scenario.link.payload == "mcp"
    function = getattr(args, "consumer_function", None)
    if function is not None:
        return session == runs_sessions(function)
    stream_only = [getattr(args, key, None) for key in ("consumer", "upstream", "upstream_ca")]
    stream_only += [getattr(args, "tls", False), request_of_args(args)]
    return not session or not any(stream_only)


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return EXIT_BAD_INPUT


def load_cases(paths: Sequence[str], select: str = "") -> list[Case]:
    """Load, validate and expand, all or nothing; raises ScenarioError / SelectionError
    (``harness.link.library``, imported here: not for ``tearline --help``)."""
    from harness.link.library import load_cases as load  # noqa: PLC0415

    return load(paths, select)


def load_files(paths: Sequence[str], select: str = "", *, strict: bool = False) -> Library:
    """Each file loaded and expanded on its own (``harness.link.library.cases_of_files``);
    every problem and warning is printed on stderr, as ``file:line: key.path: message``.
    Raises SelectionError, or RunLimitError for more cases than a run may have."""
    from harness.link.library import cases_of_files  # noqa: PLC0415

    library = cases_of_files(paths, select, strict=strict)
    for issue in sorted(
        [*library.problems, *library.warnings], key=lambda issue: _order(library, issue)
    ):
        print(issue, file=sys.stderr)
    return library


def _order(library: Library, issue: SchemaIssue) -> tuple[int, int]:
    """Issues and warnings file by file, in the order the files were read, then by line."""
    files = [load.file for load in library.loads]
    return (files.index(issue.file) if issue.file in files else len(files), issue.line)


def _not_run(library: Library) -> None:
    """The reminder after a run's summary: the files that were left out."""
    for load in library.failed:
        first = load.issues[0]
        where = f"{first.file}:{first.line}" if first.line else first.file
        count = f"{len(load.issues)} problem(s)"
        print(f"not run: {where}: {count}, listed before the cases ran", file=sys.stderr)


def print_warnings(cases: Sequence[Case]) -> None:
    """What the author should know about cases that are valid (``harness.link.unseen``)."""
    from harness.link.reference import prepared_link  # noqa: PLC0415
    from harness.link.unseen import case_warnings, may_go_unseen  # noqa: PLC0415

    shown = [
        (case.scenario.origin.file, case.scenario.origin.line, prepared, case.scenario.faults)
        for case in cases
        if case.scenario.origin is not None
        and not case.scenario.link.producer.external
        and any(may_go_unseen(f) for f in case.scenario.faults)  # else nothing to warn
        and (prepared := prepared_link(case.scenario)) is not None
    ]
    for line in case_warnings(shown):
        print(line, file=sys.stderr)
    _print_blind(cases)


def _print_blind(cases: Sequence[Case]) -> None:
    """The faults the link's payload cannot show any consumer (``harness.link.blind``),
    whoever the producer is: it is the protocol that cannot show them. An MCP session has no
    stream payload: its events are numbered by their ids, and its judge sees each one."""
    from harness.link.blind import blind_warnings  # noqa: PLC0415
    from harness.link.reference import link_spec  # noqa: PLC0415

    shown = [
        (origin.file, origin.line, link_spec(case.scenario.link), case.scenario.faults)
        for case in cases
        if (origin := case.scenario.origin) is not None
        and case.scenario.faults
        and case.scenario.link.payload != "mcp"
    ]
    for line in blind_warnings(shown):
        print(line, file=sys.stderr)


def targeted_cases(args: argparse.Namespace, cases: Sequence[Case] | None = None) -> list[Case]:
    """The selected cases (``cases``, else those of ``args.paths``, all or nothing), filtered
    and retargeted by the 'your own link' options."""
    if cases is None:
        cases = load_cases(args.paths, args.select)
    cases = [case for case in cases if _fits(case, args)]
    consumer, upstream = getattr(args, "consumer", None), getattr(args, "upstream", None)
    function = getattr(args, "consumer_function", None)
    cases = [case for case in cases if _session_fits(case, args)]
    if consumer is not None and function is not None:
        raise SelectionError("give --consumer or --consumer-function, not both")
    if function is not None:
        from harness.workers.worker import locate  # noqa: PLC0415

        if problem := locate(function):
            raise SelectionError(f"--consumer-function: {problem}")
    tls, ca, insecure = _tls_options(args)
    try:
        if consumer is not None or upstream is not None or function is not None:
            cases = [retarget(case, consumer, upstream, function) for case in cases]
        if tls or ca is not None or insecure:
            cases = [with_tls(case, tls, ca, insecure) for case in cases]
    except FieldError as err:  # a scenario's own TLS keys that the new upstream cannot take
        raise SelectionError(f"link.producer.{err.text}") from err
    if (request := request_of_args(args)) is not None:
        cases = [with_request(case, request) for case in cases]
    return cases


def request_of_args(args: argparse.Namespace) -> RequestConfig | None:
    """The request curl's options describe (``--method``, ``--path``, ``-H``, ``--data``,
    ``--data-file``, ``--json-body``), for every case; None when none is given."""
    given = [getattr(args, key, None) for key in ("method", "path", "data", "data_file")]
    json_body = getattr(args, "json_body", None)
    headers = list(getattr(args, "headers", None) or [])
    if not any(v is not None for v in given) and not headers and json_body is None:
        return None
    body = json_body if isinstance(json_body, str) else args.data
    if json_body is not None and not any(h.lower().startswith("content-type:") for h in headers):
        headers.append("Content-Type: application/json")
    try:
        return RequestConfig(args.method, args.path, tuple(headers), body, args.data_file)
    except FieldError as err:
        raise SelectionError(f"request.{err.text}") from err


def with_request(case: Case, request: RequestConfig) -> Case:
    """The case sending ``request``; ``SelectionError`` naming the case when its framing
    cannot take it (a POST on a WebSocket link)."""
    link = case.scenario.link
    try:
        # the request's path is the one to ask for: the scenario's older key yields to it
        options = replace(link.framing_options, path=request.path or link.request_path)
        link = replace(link, framing_options=options, request=request)
    except FieldError as err:
        raise SelectionError(f"{case.case_id}: link.{err.text}") from err
    return replace(case, scenario=replace(case.scenario, link=link))


class ReportPreload:
    """The report writers' imports (Jinja2, scapy, the page: ``writer.preload``), made in a
    thread while the cases run in worker processes, where the parent only waits: 0.18 of the
    0.38 s that writing the reports of 1,000 cases took (``benchmarks/bench_reports.py``).
    Started once the first result is in, so that no worker is forked while the thread may
    hold an import lock; joined before the exclusive cases run alone in this process (their
    timing must not share it) and before the reports are written. Wanted only when a CPU is
    left idle by the workers (``preload_wanted``)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=_preload_reports, name="report-preload")
            self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


def preload_wanted(report: bool, jobs: int, cpus: int) -> bool:
    """Whether to preload the writers: only with reports to write, worker processes
    (``--jobs 1`` runs the cases in this process, where the thread would compete with them)
    and fewer workers than ``cpus``. When the workers take every CPU the imports take theirs
    from the run: with ``--jobs 2`` on 2 cores, 15 pairs of tries put the run 0.10 s slower
    with the preload and the writing only 0.02 s faster (docs/benchmarks.md, Reports)."""
    return report and 1 < jobs < cpus


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or ``taskset``
    narrows)."""
    return len(os.sched_getaffinity(0))


def _preload_reports() -> None:
    from harness.artifacts.writer import preload  # noqa: PLC0415 - the point: off the main thread

    preload()


def run(args: argparse.Namespace) -> int:
    from rich.console import Console  # noqa: PLC0415

    from harness.cli.console import print_summary, progress_bar  # noqa: PLC0415
    from harness.running.execute import RunSettings, run_all  # noqa: PLC0415

    console = Console(stderr=False)
    try:
        library = load_files(args.paths, args.select)
        cases = targeted_cases(args, library.cases)
    except (ScenarioError, SelectionError) as err:
        return _fail(str(err))
    if not cases:
        return EXIT_BAD_INPUT if library.failed else _fail("no cases selected")
    print_warnings(cases)
    try:
        cases, selection = select_shard(args, cases)
    except ShardInputError as err:
        return _fail(f"tearline run: --shard-durations: {err}")
    if any(case.scenario.link.tls for case in cases):
        from harness.running.certificates import run_authority  # noqa: PLC0415 - trustme only when asked

        run_authority()  # before the workers fork: one CA for the whole run
    settings = RunSettings(args.jobs, args.in_flight, args.seed, args.deadline_ms, args.startup_ms)
    started = time.monotonic()
    wanted = preload_wanted(bool(args.report), args.jobs, available_cpus())
    preloading = ReportPreload(enabled=wanted)
    try:
        with progress_bar(console, len(cases)) as advance:

            def progress(result: CaseResult) -> None:
                advance(result)
                preloading.start()  # (the first result: the workers have forked by now)

            results = run_all(cases, settings, progress=progress, before_alone=preloading.join)
    finally:
        preloading.join()
    elapsed = time.monotonic() - started
    print_summary(console, results, elapsed)
    if args.report:
        from harness.artifacts.writer import write_reports  # noqa: PLC0415 - scapy etc. only when asked
        from harness.reports.refused import refused_files  # noqa: PLC0415

        writing = time.monotonic()
        written = write_reports(
            results,
            args.report,
            pcap=args.pcap,
            elapsed_s=elapsed,
            command=["tearline", *sys.argv[1:]],
            detail=args.report_detail or ("all" if args.shard else "failing"),
            selection=dataclasses.replace(selection, refused=refused_files(library.problems)),
        )
        took = time.monotonic() - writing
        console.print(f"reports: {written} (written in {took:.2f} s)", soft_wrap=True)
    if library.failed:  # a file that does not load is bad input, whatever the others did
        _not_run(library)
        return EXIT_BAD_INPUT
    return 0 if all(r.ok for r in results) else 1


def validate(args: argparse.Namespace) -> int:
    try:
        library = load_files(args.paths, strict=args.strict)
    except ScenarioError as err:
        return _fail(str(err))
    print_warnings(library.cases)
    if library.failed:
        return EXIT_BAD_INPUT
    print(f"ok: {len(library.cases)} cases")
    return 0


def list_cases(args: argparse.Namespace) -> int:
    try:
        library = load_files(args.paths, args.select)
        cases = targeted_cases(args, library.cases)
    except (ScenarioError, SelectionError) as err:
        return _fail(str(err))
    for case in cases:
        print(f"{case.case_id}  seed={case.seed}")
    return EXIT_BAD_INPUT if library.failed else 0


def schema(args: argparse.Namespace) -> int:
    from harness.scenario import json_schema  # noqa: PLC0415

    print(json.dumps(json_schema(), indent=2))
    return 0
