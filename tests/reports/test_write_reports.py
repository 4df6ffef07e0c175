"""``tearline run --report DIR`` end to end, and the pcap modes."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.artifacts.writer import pcap_name, preload, write_pcaps, write_reports
from harness.cli import main
from harness.cli import scenario as scenario_command
from harness.judging.results import CaseResult
from tests.reports.conftest import MIXED
from tests.reports.synthetic import synthetic_results


@pytest.mark.parametrize(("jobs", "cpus"), [("1", 4), ("2", 4), ("2", 2)])
def test_tearline_run_writes_every_report(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    jobs: str,
    cpus: int,
) -> None:
    """With worker processes that leave a CPU idle, the writers are imported in a thread while
    the cases run; the reports are the same either way."""
    preloaded: list[str] = []

    def preload_here() -> None:
        preloaded.append(threading.current_thread().name)
        preload()

    monkeypatch.setattr(scenario_command, "_preload_reports", preload_here)
    monkeypatch.setattr(scenario_command, "available_cpus", lambda: cpus)
    out = tmp_path / "reports"
    select = "wrong-expectation or clean"
    code = main(["run", str(MIXED), "-k", select, "--jobs", jobs, "--report", str(out)])
    assert code == 1
    assert preloaded == (["report-preload"] if (jobs, cpus) == ("2", 4) else [])
    printed = capsys.readouterr().out
    assert "reports:" in printed and str(out) in printed  # rich may wrap the line
    assert sorted(p.name for p in out.iterdir()) == [
        "details",
        "index.html",
        "junit.xml",
        "pcaps",
        "results.json",
    ]
    document = json.loads((out / "results.json").read_text("utf-8"))
    assert [c["pcap"] for c in document["cases"]] == [
        None,
        "pcaps/0001-mixed-wrong-expectation.pcap",
    ]
    assert [p.name for p in (out / "pcaps").iterdir()] == ["0001-mixed-wrong-expectation.pcap"]
    assert document["command"][0] == "tearline"  # then the process's argv: here pytest's


def test_pcap_modes(results: Sequence[CaseResult], tmp_path: Path) -> None:
    assert write_pcaps(results, tmp_path / "none", "none", 0.0) == {}
    assert not (tmp_path / "none").exists()
    failing = write_pcaps(results, tmp_path / "failing", "failing", 0.0)
    # every case that did not pass and reached the proxy (the harness error did not)
    assert sorted(failing) == [i for i, r in enumerate(results) if not r.passed and r.timeline.legs]
    assert 5 in failing  # the inconclusive case, at least, reached it
    assert all((tmp_path / "failing" / name).is_file() for name in failing.values())
    with pytest.raises(ValueError, match="pcap"):
        write_pcaps(results, tmp_path, "some", 0.0)


def test_pcap_names_are_safe_and_unique(results: Sequence[CaseResult]) -> None:
    names = [pcap_name(i, r) for i, r in enumerate(results)]
    assert len(set(names)) == len(names)
    assert names[9] == "pcaps/0009-mixed-cut-sweep-offset=150.pcap"
    assert all(n.count("/") == 1 and " " not in n and "[" not in n for n in names)


def test_reports_into_an_existing_folder(results: Sequence[CaseResult], tmp_path: Path) -> None:
    for _ in range(2):  # a second run overwrites the first one's files
        written = write_reports(
            results[:2], str(tmp_path), pcap="none", elapsed_s=0.1, command=["x"]
        )
    assert written == str(tmp_path)
    assert json.loads((tmp_path / "results.json").read_text("utf-8"))["totals"]["cases"] == 2


def test_detail_modes_and_stale_detail_files(tmp_path: Path) -> None:
    many = synthetic_results(250)
    write_reports(many, str(tmp_path), pcap="none", elapsed_s=0.1, command=["x"], detail="all")
    assert len(list((tmp_path / "details").iterdir())) == 4  # the index and three chunks
    document = json.loads((tmp_path / "results.json").read_text("utf-8"))
    assert document["detail"] == "all"
    assert all(c["timeline"]["segments"] is not None for c in document["cases"])
    write_reports(many[:2], str(tmp_path), pcap="none", elapsed_s=0.1, command=["x"])
    assert sorted(p.name for p in (tmp_path / "details").iterdir()) == ["0000.js", "cases.js"]
    with pytest.raises(ValueError, match="detail"):
        write_reports(many, str(tmp_path), pcap="none", elapsed_s=0, command=[], detail="x")


def test_a_report_that_cannot_be_written_raises(
    results: Sequence[CaseResult], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "results.json").mkdir()  # the child process cannot write the file
    with pytest.raises(RuntimeError):
        write_reports(results[:1], str(tmp_path), pcap="none", elapsed_s=0.1, command=["x"])
    assert "IsADirectoryError" in capfd.readouterr().err
    assert (tmp_path / "index.html").is_file()  # the page was still written


def test_the_preload_is_wanted_only_beside_idle_cpus() -> None:
    wanted = scenario_command.preload_wanted
    assert [wanted(True, jobs, 4) for jobs in (1, 2, 3, 4, 5)] == [False, True, True, False, False]
    assert [wanted(True, 2, cpus) for cpus in (1, 2, 3)] == [False, False, True]
    assert wanted(False, 2, 4) is False


def test_the_preload_thread_starts_once_and_only_when_enabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[str] = []
    monkeypatch.setattr(scenario_command, "_preload_reports", lambda: started.append("x"))
    for enabled in (True, False):
        preloading = scenario_command.ReportPreload(enabled=enabled)
        preloading.start()
        preloading.start()  # (every result calls it)
        preloading.join()
    assert started == ["x"]


def test_preload_imports_what_the_reports_need() -> None:
    preload()
    wanted = {"scapy.utils", "jinja2", "harness.reports.html", "harness.reports.details"}
    assert wanted | {"harness.reports.junit"} <= set(sys.modules)
