"""What the reports cost: writing them after a run, and opening the page at 10^4 cases.

Run with ``python -m benchmarks.bench_reports [--part run|page|all]``. Times are the best of
``--tries`` (a shared machine only ever makes things slower), and every figure comes with a
ratio to a baseline measured in the same run, so a noisy machine still compares; the load
average is printed before and after.

- ``run``: a scenario file of 1,000 cases (950 passing cut sweeps across the five framings, 50
  failing: 5 %) runs as ``tearline run --jobs 2`` does (the fastest kind of case there is, so
  the hardest ratio to meet); then ``write_reports`` with pcaps of the failing cases is timed
  cold, in a fresh process that has imported what a run has imported, and again after
  ``harness.artifacts.writer.preload()``; then the command itself, ``tearline run`` with and
  without ``--report`` (which preloads the writers while the cases run), in ``--cli-tries``
  pairs run back to back. Goal: ``--report`` adds less than 10 % to the command's time.
- ``page``: a synthetic run of ``--cases`` cases (``tests/reports/synthetic.py``). Python: the
  reports, the page and its data, against writing ``results.json`` alone and against the old
  one-block-per-case page (``--old-rev``, rendered from git history). Sizes of every file.
  Headless Chromium, then headless Firefox: the page interactive (its script has the case
  index and listens), a search keystroke, and a failing case's details opened from a detail
  file not loaded yet, against loading the old page (Chromium). Goals: interactive < 2 s
  (idle machine), index.html < 2 MB, folder < 25 MB, a failing case's details < 200 ms.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from harness.artifacts.writer import write_pcaps, write_reports
from harness.cli.scenario import load_cases
from harness.judging.results import CaseResult
from harness.reports import caseview, details, html, junit, results_json
from harness.running.execute import RunSettings, run_all

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.10
MB = 1_000_000
GOALS = {"interactive_s": 2.0, "index_mb": 2.0, "folder_mb": 25.0, "detail_ms": 200.0}
OLD_REV = "40ff09d"  # the last commit with the one-block-per-case page
SCENARIOS = """\
- name: cut-sweep
  description: a cut anywhere in the envelope fails closed, on every framing.
  link: {framing: sse, payload: envelope, envelope: {records: 60, chunk_records: 5}}
  faults:
    - {kind: kill, how: rst, at: {offset: 0}}
  sweep:
    link.framing: [length-prefixed, ndjson, sse, websocket, grpc]
    faults[0].at.offset: {from: 0, to: 950, step: 5}
  expect: {verdict: ERR_ZPARQL_STREAM_TRUNCATED, complete: false}
- name: wrong-expectation
  description: a cut token stream is never complete; this expectation fails on purpose.
  link: {framing: ndjson, payload: tokens}
  faults:
    - {kind: kill, how: fin, at: {offset: 0}}
  sweep:
    faults[0].at.offset: {from: 10, to: 60, step: 1}
  expect: {verdict: COMPLETE_EXPLICIT}
"""


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def best(run: Callable[[], object], tries: int) -> float:
    return min(timed(run) for _ in range(tries))


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# -- run: what writing the reports adds to a run -------------------------------------------


def breakdown(results: Sequence[CaseResult], out: Path) -> list[tuple[str, float]]:
    """Each report on its own, warm (imports already paid), in this process."""
    run = results_json.RunInfo(("tearline",), "2025-01-01T00:00:00Z", 1.0, "failing", "bench")
    pcaps: dict[int, str] = {}

    def pcap_files() -> None:
        pcaps.update(write_pcaps(results, out, "failing", 0.0))

    def document() -> None:
        results_json.dumps(results_json.results_document(results, run, pcaps))

    def xml() -> None:
        junit.junit_xml(results, pcaps=pcaps, elapsed_s=1.0, timestamp="x")

    return [
        ("pcaps (failing)", timed(pcap_files)),
        ("results.json", timed(document)),
        ("junit.xml", timed(xml)),
        ("index.html + details/", timed(lambda: render_page(results, pcaps))),
    ]


def render_page(results: Sequence[CaseResult], pcaps: dict[int, str]) -> None:
    """What the parent process renders: the page and its data files."""
    list(details.files(results, pcaps=pcaps, sources={}))
    html.render(
        results, pcaps=pcaps, sources={}, created="x", command=["t"], elapsed_s=1.0, nonce="n"
    )


def cold_reports(pickled: Path, out: Path, *, preload: bool = False) -> float:
    """``write_reports`` timed in a fresh process (its unpickling of the results excluded);
    with ``preload``, after ``harness.artifacts.writer.preload()`` (as if it ran during the
    cases)."""
    code = (
        "import pickle, sys, time\n"
        "import harness.running.execute, harness.running.case, harness.cli.scenario\n"
        f"results = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        + (
            "import harness.artifacts.writer; harness.artifacts.writer.preload()\n"
            if preload
            else ""
        )
        + "start = time.perf_counter()\n"
        "from harness.artifacts.writer import write_reports\n"
        f"write_reports(results, {str(out)!r}, pcap='failing', elapsed_s=1.0, command=[])\n"
        "print(time.perf_counter() - start)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"write_reports failed:\n{done.stderr}")
    return float(done.stdout)


def cli_run(scenario_file: Path, jobs: int, report: Path | None) -> tuple[float, float]:
    """``tearline run`` as a user types it, with or without ``--report``: (the run's time, as
    its summary says, and the reports' time, as its last line says; 0 without)."""
    command = [sys.executable, "-m", "harness.cli", "run", str(scenario_file), "--jobs", str(jobs)]
    if report is not None:
        command += ["--report", str(report), "--pcap", "failing"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # (1: the 50 failing cases)
        raise SystemExit(f"tearline run failed:\n{done.stderr}")
    run = re.search(r"cases in ([0-9.]+) s", done.stdout)
    written = re.search(r"written in ([0-9.]+) s", done.stdout)
    if run is None or (report is not None and written is None):
        raise SystemExit(f"tearline run printed no times:\n{done.stdout}")
    return float(run.group(1)), float(written.group(1)) if written else 0.0


def _listed(seconds: Sequence[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


def cli_part(scenario_file: Path, jobs: int, tries: int, out: Path) -> None:
    """What ``--report`` adds to the command, in pairs of tries run back to back (the goal's
    figure): the reports' own time, and what the run itself lost to the writers' imports made
    meanwhile (``ReportPreload``), as the median of each pair's difference. The wall time of
    the whole command moves by more than the reports take from one try to the next on a
    shared machine, so the command's own clocks are read; its summary gives the run's time to
    0.1 s, so the pairs are many."""
    bare, reported, writes = [], [], []
    for _ in range(tries):
        bare.append(cli_run(scenario_file, jobs, None)[0])
        run_s, write_s = cli_run(scenario_file, jobs, out)
        reported.append(run_s)
        writes.append(write_s)
    run_s, write_s = statistics.median(bare), statistics.median(writes)
    slower = statistics.median(r - b for r, b in zip(reported, bare, strict=True))
    ratio = (write_s + max(slower, 0.0)) / run_s
    verdict = "meets" if ratio < GOAL else "MISSES"
    print(f"tearline run --jobs {jobs}, {tries} pairs of tries, medians:")
    print(f"  run, without --report {run_s:6.2f} s   (tries: {_listed(bare)})")
    with_s = statistics.median(reported)
    print(f"  run, with --report    {with_s:6.2f} s   (tries: {_listed(reported)})")
    print(f"  writing the reports   {write_s:6.2f} s   (tries: {_listed(writes)})")
    print(
        f"--report adds {ratio:.1%} to the run: the writing, and the run's loss if any "
        f"(median of the pairs' differences {slower:+.2f} s) ({verdict} the {GOAL:.0%} goal)"
    )


def run_part(jobs: int, tries: int, cli_tries: int, tmp: Path) -> None:
    tmp.mkdir()
    scenario_file = tmp / "bench.yaml"
    scenario_file.write_text(SCENARIOS)
    cases = load_cases([str(scenario_file)])
    runs = []
    for _ in range(tries):
        start = time.perf_counter()
        results = run_all(cases, RunSettings(jobs=jobs))
        runs.append(time.perf_counter() - start)
    pickled = tmp / "results.pickle"
    pickled.write_bytes(pickle.dumps(results))
    out = tmp / "report"
    reports = [cold_reports(pickled, out) for _ in range(tries)]
    preloaded = [cold_reports(pickled, out, preload=True) for _ in range(tries)]
    run_s, report_s = min(runs), min(reports)
    failing = sum(r.outcome != "pass" for r in results)
    print(f"== run: {len(results)} cases ({failing} failing), --jobs {jobs}, best of {tries}")
    print(f"run:     {run_s:7.2f} s   (tries: {', '.join(f'{s:.2f}' for s in runs)})")
    print(f"reports: {report_s:7.2f} s   (tries: {', '.join(f'{s:.2f}' for s in reports)})")
    ratio = report_s / run_s
    print(f"write_reports cold, in a fresh process: {ratio:.1%} of the run time")
    warm_s = min(preloaded)
    print(f"preloaded during the run: {warm_s:.2f} s, {warm_s / run_s:.1%} of the run time")
    cli_part(scenario_file, jobs, cli_tries, tmp / "cli-report")
    write_reports(results, str(out), pcap="failing", elapsed_s=run_s, command=[])
    print_sizes(out)
    print("warm, each report alone, one core:")
    for name, seconds in breakdown(results, tmp / "again"):
        print(f"  {name:<22} {seconds * 1000:7.0f} ms")


# -- page: the page at scale, in Chromium --------------------------------------------------


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def print_sizes(out: Path) -> dict[str, float]:
    names = ["index.html", "details", "results.json", "junit.xml", "pcaps"]
    sizes = {name: size(out / name) / MB for name in names if (out / name).exists()}
    for name, mb in sizes.items():
        print(f"  {name:<14} {mb:7.2f} MB")
    sizes["folder"] = size(out) / MB
    print(f"  {'folder':<14} {sizes['folder']:7.2f} MB")
    return sizes


def old_renderer(rev: str, into: Path) -> ModuleType:
    """The page renderer of commit ``rev`` (one ``<details>`` block per case), imported as the
    package ``tearline_old_reports``."""
    package = into / "tearline_old_reports"
    (package / "templates").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in (
        "html.py",
        "drawing.py",
        "summary.py",
        *(f"templates/{t}" for t in ("index.html.j2", "report.css", "report.js")),
    ):
        text = subprocess.run(
            ["git", "show", f"{rev}:harness/reports/{name}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        text = text.replace("harness.reports.drawing", "tearline_old_reports.drawing")
        text = text.replace("harness.reports.summary", "tearline_old_reports.summary")
        loader = 'PackageLoader("harness.reports"'
        text = text.replace(loader, 'PackageLoader("tearline_old_reports"')
        (package / name).write_text(text)
    sys.path.insert(0, str(into))
    return importlib.import_module("tearline_old_reports.html")


def write_old_page(results: Sequence[CaseResult], rev: str, tmp: Path) -> tuple[Path, float]:
    old = old_renderer(rev, tmp / "old-code")
    start = time.perf_counter()
    page = old.render(results, pcaps={}, sources={}, created="x", command=[], elapsed_s=1.0)
    seconds = time.perf_counter() - start
    path = tmp / "old" / "index.html"
    path.parent.mkdir()
    path.write_text(page, encoding="utf-8")
    return path, seconds


OPEN_DETAIL = """async (id) => {
  const search = document.getElementById("search");
  search.value = id;
  search.dispatchEvent(new Event("input"));
  const item = document.querySelector("#rows .case");
  const start = performance.now();
  item.querySelector(".summary").click();
  await new Promise((resolve) => {
    const done = () => item.querySelector("svg.timeline") !== null;
    if (done()) { resolve(); return; }
    new MutationObserver((_, watch) => { if (done()) { watch.disconnect(); resolve(); } })
      .observe(item, {childList: true, subtree: true});
  });
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  return performance.now() - start;
}"""
KEYSTROKE = """async (query) => {
  const search = document.getElementById("search");
  const start = performance.now();
  search.value = query;
  search.dispatchEvent(new Event("input"));
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  return performance.now() - start;
}"""
TIMES = """async () => {
  await new Promise((resolve) => {
    const loaded = () => performance.getEntriesByType("navigation")[0]?.loadEventEnd > 0;
    const look = () => (loaded() ? resolve() : requestAnimationFrame(look));
    look();
  });
  const nav = performance.getEntriesByType("navigation")[0];
  const ready = performance.getEntriesByName("tearline:ready")[0];
  return {dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd,
          ready: ready ? ready.startTime : nav.loadEventEnd};
}"""


class Tab(Protocol):
    """A browser tab as both drivers give one: Playwright's ``Page``, and the BiDi ``Tab``
    of ``tests/reports/firefox.py``."""

    def evaluate(self, function: str, arg: Any = None) -> Any: ...

    def close(self) -> None: ...


def measured(
    open_tab: Callable[[Path, bool], Tab],
    out: Path,
    old: Path | None,
    results: Sequence[CaseResult],
    tries: int,
) -> dict[str, Any]:
    """In one browser: the page's navigation times (best of ``tries`` fresh tabs), six failing
    cases' details opened from detail files not loaded yet, six search keystrokes, and the
    old page's times."""
    runs = []
    for _ in range(tries):
        tab = open_tab(out / "index.html", True)
        runs.append(tab.evaluate(TIMES))
        tab.close()
    tab = open_tab(out / "index.html", True)
    failing = [i for i, r in enumerate(results) if not r.passed]
    picks = [failing[k * len(failing) // 7] for k in range(1, 7)]  # six chunks, none loaded
    opens = [tab.evaluate(OPEN_DETAIL, results[i].case_id) for i in picks]
    queries = ["websocket", "tokens-2", "offset=99", "slices", "::", "no-such-case"]
    strokes = [tab.evaluate(KEYSTROKE, q) for q in queries]
    tab.close()
    old_times = None
    if old is not None:
        tab = open_tab(old, False)
        old_times = tab.evaluate(TIMES)
        tab.close()
    best_run = min(runs, key=lambda t: t["ready"])
    return {"first": best_run, "opens": opens, "strokes": strokes, "old": old_times}


def print_browser(name: str, tries: int, got: dict[str, Any]) -> None:
    first, opens, strokes, old_times = got["first"], got["opens"], got["strokes"], got["old"]
    ready_s = first["ready"] / 1000
    print(
        f"{name}, best of {tries}: DOMContentLoaded {first['dcl']:.0f} ms, load "
        f"{first['load']:.0f} ms, interactive {ready_s:.2f} s"
    )
    print(f"  interactive {meets(ready_s, 'interactive_s')} s")
    if old_times is not None:
        print(
            f"  old page: load (= interactive) {old_times['ready'] / 1000:.2f} s; the new page "
            f"is interactive in {first['ready'] / old_times['ready']:.1%} of that"
        )
    print(
        f"  search keystroke (filter + render): median {statistics.median(strokes):.0f} ms, "
        f"max {max(strokes):.0f} ms over {len(strokes)} queries"
    )
    print(
        f"  failing case's details, detail file not loaded yet: median "
        f"{statistics.median(opens):.0f} ms, max {max(opens):.0f} ms over {len(opens)} cases "
        f"({meets(max(opens), 'detail_ms')})"
    )


def chromium_part(out: Path, old: Path | None, results: Sequence[CaseResult], tries: int) -> None:
    from tests.reports.chromium import chromium, open_report  # noqa: PLC0415 - page part only

    with tempfile.TemporaryDirectory() as profile, chromium(Path(profile)) as context:

        def open_tab(index_html: Path, new: bool) -> Tab:
            page = context.new_page()
            if new:
                open_report(page, index_html)
            else:  # the old page is interactive at its load event (its script ends the body)
                page.goto(index_html.as_uri(), timeout=600_000)
            return page

        got = measured(open_tab, out, old, results, tries)
    print_browser("Chromium", tries, got)


def firefox_part(out: Path, results: Sequence[CaseResult], tries: int) -> None:
    import shutil  # noqa: PLC0415

    from tests.reports.firefox import firefox  # noqa: PLC0415 - page part only

    executable = shutil.which("firefox-esr") or shutil.which("firefox")
    if executable is None:
        print("Firefox: not installed (apt-get install firefox-esr), not measured")
        return
    with tempfile.TemporaryDirectory() as profile, firefox(Path(profile), executable) as browser:

        def open_tab(index_html: Path, new: bool) -> Tab:
            tab = browser.new_tab()
            tab.goto(index_html.as_uri(), ready=new)
            return tab

        got = measured(open_tab, out, None, results, tries)
    print_browser("Firefox", tries, got)


def meets(value: float, goal: str) -> str:
    return f"{'meets' if value < GOALS[goal] else 'MISSES'} the < {GOALS[goal]:g} goal"


def page_part(cases: int, tries: int, old_rev: str, tmp: Path) -> None:
    from tests.reports.synthetic import synthetic_results  # noqa: PLC0415

    tmp.mkdir()
    results = synthetic_results(cases)
    failing = sum(not r.passed for r in results)
    print(f"== page: {len(results):,} synthetic cases ({failing} not passing), best of {tries}")
    out = tmp / "synthetic"
    run = results_json.RunInfo(("tearline",), "x", 1.0, "failing", "bench")
    document = results_json.results_document
    json_s = best(lambda: results_json.dumps(document(results, run, {})), tries)
    page_s = best(lambda: render_page(results, {}), tries)
    write_s = best(
        lambda: write_reports(results, str(out), pcap="failing", elapsed_s=1.0, command=[]), tries
    )
    groups = caseview.scenarios(results)
    print(
        f"results.json alone {json_s:.2f} s (baseline); index.html + details/ {page_s:.2f} s "
        f"({page_s / json_s:.2f}x); write_reports, both processes {write_s:.2f} s "
        f"({write_s / json_s:.2f}x); {len(groups.keys)} scenarios"
    )
    old = None
    if old_rev:
        try:
            old, old_s = write_old_page(results, old_rev, tmp)
            print(
                f"old page ({old_rev}) {old_s:.2f} s to render, {size(old) / MB:.1f} MB; the "
                f"new page and its data take {page_s / old_s:.2f}x that"
            )
        except (subprocess.CalledProcessError, ImportError, AttributeError, TypeError) as err:
            print(f"old page ({old_rev}): not available ({err.__class__.__name__}), skipped")
    sizes = print_sizes(out)
    everything = results_json.dumps(results_json.results_document(results, run, {}, "all"))
    print(f"  (results.json with detail 'all': {len(everything.encode()) / MB:.2f} MB)")
    print(
        f"index.html {meets(sizes['index.html'], 'index_mb')} MB, the folder "
        f"{meets(sizes['folder'], 'folder_mb')} MB"
    )
    chromium_part(out, old, results, tries)
    firefox_part(out, results, tries)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("run", "page", "all"), default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tries", type=int, default=3, help="best of this many (default 3)")
    parser.add_argument(
        "--cli-tries", type=int, default=9, help="run: pairs of tearline run tries (default 9)"
    )
    parser.add_argument("--cases", type=int, default=10_000, help="page: synthetic cases")
    parser.add_argument("--old-rev", default=OLD_REV, help="page: the old page's commit ('': none)")
    args = parser.parse_args(argv)
    print(f"load average at start: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("run", "all"):
            run_part(args.jobs, args.tries, args.cli_tries, Path(tmp) / "run")
        if args.part in ("page", "all"):
            page_part(args.cases, args.tries, args.old_rev, Path(tmp) / "page")
    print(f"load average at end: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
