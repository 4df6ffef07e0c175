"""What writing the reports adds to a 1,000-case run.

Run with ``python -m benchmarks.bench_reports``. The script writes a scenario file of 1,000 cases
(950 passing cut sweeps across the five framings, 50 failing cases: 5 %) and runs them as
``tearline run --jobs 2`` does (the fastest kind of case there is, so the hardest ratio to meet).
Then it times ``write_reports`` with pcaps of the failing cases only, cold, each time in a fresh
process that has imported what a run has imported (so the first call pays for importing Jinja2
and scapy, as a real run does), then again after ``harness.reports.writer.preload()`` (as if it had
run in a thread during the cases). Times are the best of a few tries, because a shared machine
only ever makes things slower. It prints the times, the ratios, each file's size and a warm
breakdown per report. Goal (issue): reports add less than 10 % to the run time.
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.cli.scenario import load_cases
from harness.judging.results import CaseResult
from harness.reports import html, junit, results_json
from harness.reports.writer import write_pcaps, write_reports
from harness.running.execute import run_all

GOAL = 0.10
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

    def page() -> None:
        html.render(
            results, pcaps=pcaps, sources={}, created="x", command=["tearline"], elapsed_s=1.0
        )

    return [
        ("pcaps (failing)", timed(pcap_files)),
        ("results.json", timed(document)),
        ("junit.xml", timed(xml)),
        ("index.html", timed(page)),
    ]


def cold_reports(pickled: Path, out: Path, *, preload: bool = False) -> float:
    """``write_reports`` timed in a fresh process (its unpickling of the results excluded);
    with ``preload``, after ``harness.reports.writer.preload()`` (as if it had run during the cases)."""
    code = (
        "import pickle, sys, time\n"
        "import harness.running.execute, harness.running.runner, harness.cli.scenario\n"
        f"results = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        + ("import harness.reports.writer; harness.reports.writer.preload()\n" if preload else "")
        + "start = time.perf_counter()\n"
        "from harness.reports.writer import write_reports\n"
        f"write_reports(results, {str(out)!r}, pcap='failing', elapsed_s=1.0, command=[])\n"
        "print(time.perf_counter() - start)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"write_reports failed:\n{done.stderr}")
    return float(done.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tries", type=int, default=3, help="best of this many (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        scenario_file = Path(tmp) / "bench.yaml"
        scenario_file.write_text(SCENARIOS)
        cases = load_cases([str(scenario_file)])
        runs = []
        for _ in range(args.tries):
            start = time.perf_counter()
            results = run_all(cases, jobs=args.jobs)
            runs.append(time.perf_counter() - start)
        pickled = Path(tmp) / "results.pickle"
        pickled.write_bytes(pickle.dumps(results))
        out = Path(tmp) / "report"
        reports = [cold_reports(pickled, out) for _ in range(args.tries)]
        preloaded = [cold_reports(pickled, out, preload=True) for _ in range(args.tries)]
        run_s, report_s = min(runs), min(reports)
        failing = sum(r.outcome != "pass" for r in results)
        print(f"{len(results)} cases ({failing} failing), --jobs {args.jobs}, best of {args.tries}")
        print(f"run:     {run_s:7.2f} s   (tries: {', '.join(f'{s:.2f}' for s in runs)})")
        print(f"reports: {report_s:7.2f} s   (tries: {', '.join(f'{s:.2f}' for s in reports)})")
        ratio = report_s / run_s
        verdict = "meets" if ratio < GOAL else "MISSES"
        print(f"reports add {ratio:.1%} to the run time ({verdict} the {GOAL:.0%} goal)")
        warm_s = min(preloaded)
        print(f"preloaded during the run: {warm_s:.2f} s, {warm_s / run_s:.1%} of the run time")
        write_reports(results, str(out), pcap="failing", elapsed_s=run_s, command=[])
        for name in ("index.html", "results.json", "junit.xml"):
            print(f"  {name:<14} {(out / name).stat().st_size / 1e6:6.2f} MB")
        pcap_bytes = sum(p.stat().st_size for p in (out / "pcaps").glob("*.pcap"))
        print(f"  {'pcaps':<14} {pcap_bytes / 1e6:6.2f} MB in {failing} files")
        print("warm, each report alone, one core:")
        for name, seconds in breakdown(results, Path(tmp) / "again"):
            print(f"  {name:<16} {seconds * 1000:7.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
