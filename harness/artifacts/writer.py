"""Writing the reports of a run: the I/O shell around the pure renderers.

- ``index.html``: the summary page (``html``): totals, a framing x fault matrix, the failing
  cases in full, every scenario on a line with its sweep strip, and a searchable case list;
- ``details/``: the page's case index and every case's details, loaded on demand (``details``);
- ``junit.xml``: one test case per case, one suite per scenario file (``junit``);
- ``results.json``: every case, machine-readable, schema ``results.schema.json``
  (``results_json``; per-write segments of passing cases only with ``detail="all"``);
- ``pcaps/*.pcap``: both legs of each failing case, or of every case with ``pcap="all"``
  (``pcap``; scapy is imported only when a pcap is written).

The page and most of its data are rendered in this process while a forked child writes the
other files and a share of ``details/``, so the reports cost two cores about as long as half
the work. See ``docs/reports.md``.
"""

from __future__ import annotations

import gc
import multiprocessing
import re
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.judging.results import CaseResult
from harness.reports import details
from harness.reports.caseview import Scenarios, scenarios
from harness.reports.joined import Joined, joined_document, result_of
from harness.reports.refused import RefusedFile
from harness.reports.results_json import DETAIL_MODES, Selection
from harness.reports.source import SourceReader
from harness.reports.summary import is_failing

PCAP_MODES = ("failing", "all", "none")
PCAP_DIR = "pcaps"
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def pcap_name(index: int, result: CaseResult) -> str:
    """``pcaps/0007-demo-rst-inside-chunk.pcap``: the index keeps names unique, the id readable."""
    slug = _UNSAFE.sub("-", result.case_id.replace("::", "-")).strip("-")[:80]
    return f"{PCAP_DIR}/{index:04d}-{slug}.pcap"


def pcap_names(results: Sequence[CaseResult], mode: str) -> dict[int, str]:
    """Which cases ``mode`` gives a pcap, and its path relative to the report folder, by index.
    A case that never reached the proxy has nothing to capture."""
    if mode not in PCAP_MODES:
        raise ValueError(f"pcap: expected one of {PCAP_MODES}, got {mode!r}")
    return {
        i: pcap_name(i, r)
        for i, r in enumerate(results)
        if r.timeline.legs and (mode == "all" or (mode == "failing" and is_failing(r)))
    }


def write_pcaps(
    results: Sequence[CaseResult], out: Path, mode: str, base_time: float
) -> dict[int, str]:
    """Write the pcap files ``mode`` asks for; returns ``pcap_names``."""
    names = pcap_names(results, mode)
    if not names:
        return names
    from harness.artifacts.pcap import write_pcap  # noqa: PLC0415 - pulls in scapy

    (out / PCAP_DIR).mkdir(parents=True, exist_ok=True)
    for index, name in names.items():
        write_pcap(results[index].timeline, out / name, base_time=base_time)
    return names


def _in_child(job: Callable[[], None]) -> Callable[[], None]:
    """Start ``job`` in a forked child and return a function that waits for it and raises if it
    failed. Forking shares the results already in memory (nothing is pickled), so the page and
    the other reports are written on two cores at once."""
    sys.stdout.flush()  # else the child would print the parent's pending output again
    sys.stderr.flush()
    # Keep the garbage collector off the objects both processes share: a full collection
    # touches every object, and each page it touches is then copied (about 10 % here).
    gc.freeze()
    child = multiprocessing.get_context("fork").Process(target=job, name="tearline-reports")
    child.start()

    def join() -> None:
        child.join()
        gc.unfreeze()
        if child.exitcode != 0:
            raise RuntimeError(
                f"writing pcaps, results.json or junit.xml failed ({child.exitcode})"
            )

    return join


def read_sources(results: Sequence[CaseResult]) -> dict[tuple[str, int], str]:
    """The YAML text of each scenario the results come from, by (file, line), read once."""
    reader = SourceReader()
    return {(r.file, r.line): reader.source(r.file, r.line) for r in results if r.file}


def _version() -> str:
    from importlib import metadata  # noqa: PLC0415 - slow to import; only the child needs it

    try:
        return metadata.version("tearline")
    except metadata.PackageNotFoundError:
        return "unknown"


def preload() -> None:
    """Import what writing the reports needs (Jinja2 and the page, scapy's pcap writer, the
    JSON and JUnit writers). ``tearline run`` can call it in a thread while the cases run (its
    main thread only waits for the worker processes then), so the reports do not pay about a
    tenth of a second of imports at the end."""
    import scapy.utils  # noqa: F401, PLC0415

    from harness.reports import details, html, junit, results_json  # noqa: F401, PLC0415


@dataclass(frozen=True, slots=True)
class _PageData:
    """What both processes need to write their share of ``details/``."""

    out: Path
    pcaps: dict[int, str]
    sources: dict[tuple[str, int], str]
    groups: Scenarios
    #: the scenario files the run left out
    refused: tuple[RefusedFile, ...] = ()


def _in_child_share(number: int) -> bool:
    """One detail file in six is written by the child process, which has less to do
    (results.json, junit.xml, pcaps) than the parent (the page, the index, the other detail
    files): measured, the two then end at about the same time."""
    return number % 6 == 5


def write_details(
    results: Sequence[CaseResult], data: _PageData, share: Callable[[int], bool]
) -> None:
    """The detail files whose number ``share`` picks."""
    for number, first in enumerate(details.chunk_starts(len(results))):
        if share(number):
            name, text = details.chunk_file(
                results, first, pcaps=data.pcaps, sources=data.sources, groups=data.groups
            )
            (data.out / name).write_text(text, encoding="utf-8")


def write_page(
    results: Sequence[CaseResult],
    data: _PageData,
    *,
    created: str,
    command: Sequence[str],
    elapsed_s: float,
) -> None:
    """``index.html``, the case index and the parent's share of the detail files."""
    from harness.reports import html  # noqa: PLC0415 - Jinja2: imported once the child is off

    name, text = details.index_file(results, data.groups)
    (data.out / name).write_text(text, encoding="utf-8")
    write_details(results, data, lambda number: not _in_child_share(number))
    page = html.render(
        results,
        pcaps=data.pcaps,
        sources=data.sources,
        created=created,
        command=command,
        elapsed_s=elapsed_s,
        nonce=secrets.token_urlsafe(18),
        groups=data.groups,
        refused=data.refused,
    )
    (data.out / "index.html").write_text(page, encoding="utf-8")


def _remove_stale_details(out: Path, cases: int) -> None:
    """Detail files an earlier, longer run left in the folder."""
    keep = {"cases.js", *(f"{details.chunk_name(i)}.js" for i in details.chunk_starts(cases))}
    for stale in (out / details.FOLDER).glob("*.js"):
        if stale.name not in keep:
            stale.unlink()


def write_reports(
    results: Sequence[CaseResult],
    directory: str,
    *,
    pcap: str,
    elapsed_s: float,
    command: Sequence[str],
    detail: str = "failing",
    selection: Selection | None = None,
) -> str:
    """Write every report of a run into ``directory`` (created if needed); returns its path.
    ``detail``: ``"failing"`` lists per-write segments in ``results.json`` for the cases that
    did not pass only, ``"all"`` for every case (the page always has every case's drawing);
    ``selection``: the library and the shard the results are of.
    Raises ValueError for an unknown ``pcap`` or ``detail`` mode, RuntimeError when a file
    cannot be written (the child process has printed why)."""
    if detail not in DETAIL_MODES:
        raise ValueError(f"detail: expected one of {DETAIL_MODES}, got {detail!r}")
    out = Path(directory)
    created = _now()
    pcaps = pcap_names(results, pcap)

    def machine_reports() -> None:
        # Imported here, in the child: the parent's critical path is the page.
        from harness.reports import results_json  # noqa: PLC0415

        # The captures' clock: the run's start, so packet times read as wall-clock times.
        write_pcaps(results, out, pcap, base_time=time.time() - elapsed_s)
        run = results_json.RunInfo(
            tuple(command), created, elapsed_s, pcap, _version(), selection or Selection()
        )
        document = results_json.results_document(results, run, pcaps, detail=detail)
        (out / "results.json").write_text(results_json.dumps(document), encoding="utf-8")
        _write_junit(results, out, pcaps, elapsed_s, created, refused)

    refused = selection.refused if selection is not None else ()
    return _write_all(results, out, pcaps, machine_reports, created, command, elapsed_s, refused)


def write_joined(
    joined: Joined,
    folders: Mapping[str, Path],
    directory: str,
    *,
    command: Sequence[str],
    detail: str = "failing",
) -> str:
    """The reports of one run from its shards (``harness.reports.joined``) into ``directory``:
    the page and ``junit.xml`` rendered, ``results.json`` joined, the pcaps copied from each
    shard's folder (``folders``, by shard name). Raises as ``write_reports`` does."""
    if detail not in DETAIL_MODES:
        raise ValueError(f"detail: expected one of {DETAIL_MODES}, got {detail!r}")
    out = Path(directory)
    created = _now()
    results = [result_of(record) for record in joined.records]
    pcaps = {i: pcap_name(i, results[i]) for i in joined.pcap_shards}

    def machine_reports() -> None:
        from harness.reports import results_json  # noqa: PLC0415

        if pcaps:
            (out / PCAP_DIR).mkdir(parents=True, exist_ok=True)
        for index, name in pcaps.items():
            folder = folders[joined.pcap_shards[index]]
            shutil.copyfile(folder / joined.records[index]["pcap"], out / name)
        document = joined_document(joined, results, pcaps, detail, created, command)
        (out / "results.json").write_text(results_json.dumps(document), encoding="utf-8")
        _write_junit(results, out, pcaps, joined.elapsed_s, created, joined.refused)

    elapsed = joined.elapsed_s
    return _write_all(
        results, out, pcaps, machine_reports, created, command, elapsed, joined.refused
    )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_junit(
    results: Sequence[CaseResult],
    out: Path,
    pcaps: dict[int, str],
    elapsed_s: float,
    created: str,
    refused: Sequence[RefusedFile],
) -> None:
    from harness.reports import junit  # noqa: PLC0415

    stamp = created[:-1]
    xml = junit.junit_xml(
        results, pcaps=pcaps, elapsed_s=elapsed_s, timestamp=stamp, refused=refused
    )
    (out / "junit.xml").write_bytes(xml)


def _write_all(
    results: Sequence[CaseResult],
    out: Path,
    pcaps: dict[int, str],
    machine_reports: Callable[[], None],
    created: str,
    command: Sequence[str],
    elapsed_s: float,
    refused: Sequence[RefusedFile] = (),
) -> str:
    """The page in this process while a forked child runs ``machine_reports`` and writes its
    share of the detail files."""
    (out / details.FOLDER).mkdir(parents=True, exist_ok=True)
    data = _PageData(out, pcaps, read_sources(results), scenarios(results), tuple(refused))

    def child() -> None:
        machine_reports()
        write_details(results, data, _in_child_share)

    join = _in_child(child)
    try:
        write_page(results, data, created=created, command=command, elapsed_s=elapsed_s)
    finally:
        join()
    _remove_stale_details(out, len(results))
    return str(out)
