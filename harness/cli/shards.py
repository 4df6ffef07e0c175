"""``tearline run --shard K/N``: one shard of the selection, and ``tearline report``, which
joins the shards' reports into those of one run (``docs/reports.md``)."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.scenario.shards import ShardError, assign, parse_shard

if TYPE_CHECKING:
    from harness.reports.results_json import Selection
    from harness.scenario import Case

EXIT_BAD_INPUT = 2


class ShardInputError(Exception):
    """A file given to a shard option or to ``tearline report`` that cannot be used."""


def shard_option(text: str) -> tuple[int, int]:
    try:
        return parse_shard(text)
    except ShardError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--shard",
        type=shard_option,
        default=None,
        metavar="K/N",
        help="run only shard K of N (1-based) of the selected cases (tearline report joins them)",
    )
    run.add_argument(
        "--shard-durations",
        default=None,
        metavar="RESULTS_JSON",
        help="balance the shards by the case durations of a previous run's results.json",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser(
        "report", help="join the reports of a sharded run (tearline run --shard) into one"
    )
    report.add_argument(
        "shards", nargs="+", metavar="SHARD", help="each shard's report folder or results.json"
    )
    report.add_argument(
        "--out", "-o", default="reports", metavar="DIR", help="where to write (default reports/)"
    )
    report.add_argument(
        "--report-detail",
        choices=("failing", "all"),
        default="failing",
        help="results.json: per-write segments of failing cases only (default) or of all",
    )


def library_digest(cases: Sequence[Case], seed: int | None) -> str:
    """What the shards of one run share: the scenario files' bytes, the whole selection and
    its seeds (a shard of another checkout or another ``-k`` differs)."""
    digest = hashlib.sha256()
    files = sorted({c.scenario.origin.file for c in cases if c.scenario.origin})
    for name in files:
        digest.update(name.encode() + b"\0")
        with contextlib.suppress(OSError):  # read when loaded: gone since, the ids still count
            digest.update(Path(name).read_bytes())
    for case in cases:
        digest.update(f"{case.case_id}\0{case.seed if seed is None else seed}\n".encode())
    return digest.hexdigest()[:32]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ShardInputError(f"{path}: cannot read a results.json: {err}") from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("cases"), list):
        raise ShardInputError(f"{path}: not a tearline results.json")
    return loaded


def durations_of(path: str) -> dict[str, float]:
    """Each case's duration in a previous run's ``results.json``."""
    document = _read_json(Path(path))
    try:
        return {str(c["id"]): float(c["duration_s"]) for c in document["cases"]}
    except (KeyError, TypeError, ValueError):
        raise ShardInputError(f"{path}: a case without id or duration_s") from None


def select_shard(args: argparse.Namespace, cases: Sequence[Case]) -> tuple[list[Case], Selection]:
    """The cases of this run's shard and what its reports say of the selection."""
    from harness.reports.results_json import Selection  # noqa: PLC0415

    library = library_digest(cases, args.seed)
    if args.shard is None:
        return list(cases), Selection(library)
    k, n = args.shard
    durations = None if args.shard_durations is None else durations_of(args.shard_durations)
    shards = assign([c.case_id for c in cases], n, durations)
    positions = tuple(i for i, shard in enumerate(shards) if shard == k - 1)
    mine = [cases[i] for i in positions]
    return mine, Selection(library, (k, n), len(cases), positions)


def _results_path(given: str) -> Path:
    path = Path(given)
    return path / "results.json" if path.is_dir() else path


def report(args: argparse.Namespace) -> int:
    """``tearline report SHARD...``: the shards joined into the reports of one run."""
    from harness.artifacts.writer import write_joined  # noqa: PLC0415
    from harness.reports.joined import JoinError, Shard, join  # noqa: PLC0415

    try:
        paths = [_results_path(given) for given in args.shards]
        shards = [Shard(str(path), _read_json(path)) for path in paths]
        joined = join(shards)
    except (ShardInputError, JoinError) as err:
        print(f"tearline report: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    folders = {str(path): path.parent for path in paths}
    command = ["tearline", *sys.argv[1:]]
    written = write_joined(joined, folders, args.out, command=command, detail=args.report_detail)
    totals = joined_totals(joined.records)
    print(f"joined {len(shards)} shards, {totals}: {written}")
    for refused in joined.refused:  # the shards' runs said so; the joined run says it again
        print(f"not run: {refused.where}: {len(refused.problems)} problem(s)", file=sys.stderr)
    if joined.refused:
        return EXIT_BAD_INPUT
    return 0 if all(_ok(r) for r in joined.records) else 1


def joined_totals(records: Sequence[dict[str, Any]]) -> str:
    passed = sum(r["outcome"] == "pass" for r in records)
    return f"{len(records)} cases, {passed} passed"


def _ok(record: dict[str, Any]) -> bool:
    """As ``CaseResult.ok``: a pass for the reference consumer, any grade but failed for
    another."""
    if record["grade"] is None:
        return bool(record["outcome"] == "pass")
    return bool(record["grade"] != "failed")
