"""Sharded runs as one: ``tearline run --shard K/N`` and ``tearline report``, which joins the
shards' ``results.json`` into the reports of one run.

The join is checked two ways: the same results written whole and as four shards join into the
same files (byte for byte, but for the times and the command; the results' times held to the
microsecond ``results.json`` keeps), and a real four-shard run of the mixed run joins into a
report of the same cases, outcomes and JUnit test cases as an unsharded run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from harness.artifacts.writer import write_reports
from harness.cli.main import main
from harness.evidence.timeline import Timeline
from harness.judging.results import CaseResult, Target
from harness.reports.joined import JoinError, Shard, join, result_of
from harness.reports.results_json import Selection, case_record
from harness.scenario.shards import ShardError, assign, parse_shard
from tests.reports.conftest import COMMAND, MIXED

LIBRARY = "0123456789abcdef0123456789abcdef"
#: what differs between two writes of the same results: when, the nonce, the command
_VARIES = [
    (re.compile(r'timestamp="[^"]*"'), 'timestamp=""'),
    (re.compile(r'nonce="[^"]*"|nonce-[A-Za-z0-9_-]+'), "nonce"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"), "WHEN"),
]


def _to_microseconds(result: CaseResult) -> CaseResult:
    """``result`` with its times as ``results.json`` keeps them (to the microsecond)."""
    t = result.timeline
    timeline = Timeline(
        started=t.started,
        segments=[dataclasses.replace(s, t=round(s.t, 6)) for s in t.segments],
        faults=[dataclasses.replace(f, t=round(f.t, 6)) for f in t.faults],
        ends=[dataclasses.replace(e, t=round(e.t, 6)) for e in t.ends],
        legs=t.legs,
        segments_dropped=t.segments_dropped,
        faults_dropped=t.faults_dropped,
    )
    startup = None if result.startup_s is None else round(result.startup_s, 6)
    return dataclasses.replace(
        result, duration_s=round(result.duration_s, 6), startup_s=startup, timeline=timeline
    )


def _write_shards(results: Sequence[CaseResult], root: Path, n: int) -> list[Path]:
    shards = assign([r.case_id for r in results], n)
    folders = []
    for k in range(1, n + 1):
        positions = tuple(i for i, s in enumerate(shards) if s == k - 1)
        folder = root / f"shard-{k}"
        write_reports(
            [results[i] for i in positions],
            str(folder),
            pcap="all",
            elapsed_s=1.25,
            command=COMMAND,
            detail="all",
            selection=Selection(LIBRARY, (k, n), len(results), positions),
        )
        folders.append(folder)
    return folders


def _normalised(path: Path, command: Sequence[str]) -> str:
    text = path.read_text("utf-8").replace(html.escape(" ".join(command)), "COMMAND")
    for pattern, replacement in _VARIES:
        text = pattern.sub(replacement, text)
    return text


def _document(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "results.json").read_text("utf-8"))
    return loaded


@pytest.fixture(scope="module")
def exact(results: Sequence[CaseResult], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mixed run written whole (``whole``), as four shards, and joined (``joined``)."""
    root = tmp_path_factory.mktemp("shards")
    held = [_to_microseconds(r) for r in results]
    write_reports(
        held,
        str(root / "whole"),
        pcap="all",
        elapsed_s=1.25,
        command=COMMAND,
        selection=Selection(LIBRARY),
    )
    folders = _write_shards(held, root, 4)
    argv = ["report", *map(str, folders), "--out", str(root / "joined")]
    # the joined report names the command it was made by (``sys.argv``): here, this one
    with mock.patch.object(sys, "argv", ["tearline", *argv]):
        assert main(argv) == 1  # a fail
    return root


def test_the_four_shards_each_hold_some_of_the_cases(exact: Path) -> None:
    counts = [len(_document(exact / f"shard-{k}")["cases"]) for k in range(1, 5)]
    assert sum(counts) == 15 and all(counts), counts


def test_joined_results_json_is_the_whole_runs(exact: Path) -> None:
    whole, joined = _document(exact / "whole"), _document(exact / "joined")
    shards = joined.pop("shards")
    assert [s["shard"] for s in shards] == ["1/4", "2/4", "3/4", "4/4"]
    for document in (whole, joined):
        del document["created"], document["command"]
    assert joined == whole


def test_joined_page_details_and_junit_are_the_whole_runs(exact: Path) -> None:
    whole, joined = exact / "whole", exact / "joined"
    names = sorted(p.relative_to(whole).as_posix() for p in whole.rglob("*") if p.is_file())
    assert names == sorted(
        p.relative_to(joined).as_posix() for p in joined.rglob("*") if p.is_file()
    )
    for name in names:
        if name.endswith(".pcap"):  # packet times are the wall clock of each write
            assert (whole / name).stat().st_size == (joined / name).stat().st_size, name
        elif name != "results.json":  # above: it names each shard's run
            command = ["tearline", "report", *(str(exact / f"shard-{k}") for k in range(1, 5))]
            joined_text = _normalised(joined / name, [*command, "--out", str(joined)])
            assert joined_text == _normalised(whole / name, COMMAND), name


def _shard_docs(exact: Path) -> list[Shard]:
    return [Shard(f"shard-{k}", _document(exact / f"shard-{k}")) for k in range(1, 5)]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda docs: docs[1].update(tool_version="0.0.0"), "tool_version"),
        (lambda docs: docs[2].update(library="another"), "library"),
        (lambda docs: docs[3].update(shard="1/4"), "duplicate"),
        (lambda docs: docs[3].update(shard="4/5"), "shard-count"),
        (lambda docs: docs[0].update(detail="failing"), "detail"),
        (lambda docs: docs[0].update(version=1), "not-results"),
        (lambda docs: docs[0]["cases"].append(docs[1]["cases"][0]), "overlap"),
        (lambda docs: docs[0].update(selected=16), "incomplete"),
    ],
)
def test_shards_of_different_runs_are_refused(exact: Path, change: Any, code: str) -> None:
    shards = _shard_docs(exact)
    change([s.document for s in shards])
    with pytest.raises(JoinError) as err:
        join(shards)
    assert err.value.code == code


def test_a_missing_shard_is_named(exact: Path) -> None:
    with pytest.raises(JoinError) as err:
        join(_shard_docs(exact)[:3])
    assert (err.value.code, err.value.text) == ("missing", "shard 4/4 missing")


def test_the_command_refuses_in_one_line(
    exact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = [str(exact / f"shard-{k}") for k in (1, 2, 4)]
    assert main(["report", *folders, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == "tearline report: shard 3/4 missing\n"
    assert not (tmp_path / "out").exists()


def _cases_of(folder: Path) -> list[tuple[Any, ...]]:
    keys = ("id", "index", "outcome", "grade", "expected", "observed_label", "replay")
    return [tuple(case[k] for k in keys) for case in _document(folder)["cases"]]


def _junit_cases(folder: Path) -> list[str]:
    text = (folder / "junit.xml").read_text("utf-8")
    return re.findall(r'<testcase classname="[^"]*" name="[^"]*"|<failure|<error', text)


def test_a_four_shard_run_joins_into_the_unsharded_runs_report(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert main(["run", str(MIXED), "--report", str(whole)]) == 1
    folders = []
    for k in range(1, 5):
        folder = tmp_path / f"shard-{k}"
        assert main(["run", str(MIXED), "--shard", f"{k}/4", "--report", str(folder)]) in (0, 1)
        folders.append(str(folder))
    joined = tmp_path / "joined"
    assert main(["report", *folders, "--out", str(joined)]) == 1
    assert _cases_of(joined) == _cases_of(whole)
    assert _document(joined)["totals"] == _document(whole)["totals"]
    assert _document(joined)["library"] == _document(whole)["library"]
    assert _junit_cases(joined) == _junit_cases(whole)
    assert (joined / "index.html").exists()


def test_shards_split_by_hash_or_balanced_by_durations() -> None:
    ids = [f"f::case[{i}]" for i in range(6)]
    assert assign(ids, 2) == assign(list(ids), 2)  # every machine agrees
    durations = {"f::case[0]": 9.0, "f::case[1]": 5.0, "f::case[2]": 4.0, "f::case[3]": 1.0}
    # longest first, each to the shard with the least so far; the two unknown count at the
    # mean of the known (4.75): 9 -> 0; 5 -> 1; 4.75 (4) -> 1; 4.75 (5) -> 0; 4 -> 1; 1 -> 0
    assert assign(ids, 2, durations) == [0, 1, 1, 0, 1, 0]


def test_a_run_balanced_by_durations_runs_the_balanced_shard(tmp_path: Path) -> None:
    everything = [line.split()[0] for line in _listed()]
    durations = {everything[0]: 10.0, everything[1]: 3.0, everything[2]: 1.0}
    previous = tmp_path / "previous.json"
    cases = [{"id": i, "duration_s": d} for i, d in durations.items()]
    previous.write_text(json.dumps({"cases": cases}))
    report = tmp_path / "shard"
    argv = ["run", str(MIXED), "--shard", "2/3", "--shard-durations", str(previous)]
    assert main([*argv, "--report", str(report)]) in (0, 1)
    document = _document(report)
    balanced = assign(everything, 3, durations)
    assert balanced != assign(everything, 3)  # not the split by hash
    mine = [i for i, shard in enumerate(balanced) if shard == 1]
    assert [c["index"] for c in document["cases"]] == mine
    assert (document["shard"], document["selected"]) == ("2/3", 15)


def _listed() -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["list", str(MIXED)]) == 0
    return out.getvalue().splitlines()


def test_a_shard_option_is_k_of_n() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "2", "a/b", "2/0"):
        with pytest.raises(ShardError):
            parse_shard(bad)


def test_a_durations_file_that_is_not_results_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    argv = ["run", str(MIXED), "--shard", "1/2", "--shard-durations", str(bad)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"tearline run: --shard-durations: {bad}: not a tearline results.json\n"
    )


def test_a_record_reads_back_as_the_result_the_renderers_see(
    results: Sequence[CaseResult],
) -> None:
    target = Target(consumer=("prog", "{host}"), function=None, tls=True, request=("-X", "POST"))
    for result in (_to_microseconds(r) for r in results):
        theirs = dataclasses.replace(result, target=target)
        back = result_of(case_record(theirs, None, "all"))
        assert back.target == target
        same = ("case_id", "outcome", "grade", "checks", "params", "duration_s", "frames")
        assert [getattr(back, k) for k in same] == [getattr(theirs, k) for k in same]
        assert back.timeline.segments == theirs.timeline.segments
        assert back.timeline.ends == theirs.timeline.ends
