"""The data the page loads on demand, written beside it in ``details/``.

- ``details/cases.js``: the case index, one column per field (id, outcome, framing, fault
  family, scenario, diagnosis, swept values, verdict) plus the scenario list: what search,
  filters, the case list and the strips run on;
- ``details/NNNN.js``: the details of cases ``NNNN * CHUNK`` to ``NNNN * CHUNK + CHUNK - 1``
  (facts, checks, timeline drawing as ``shapes`` data, fault table, scenario source).

A page opened from ``file://`` cannot ``fetch()`` files beside it, but it can run scripts from
there: each file assigns one string to ``window.tearlineData[name]``, the JSON document
compressed with zlib and base64-encoded (the documents repeat themselves, so about a tenth of the
size), which ``templates/detail.js`` inflates with the browser's ``DecompressionStream``.
Pure: results in, (path, text) pairs out; ``writer`` writes them.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness.judging.results import OUTCOMES, CaseResult
from harness.reports import caseview, shapes
from harness.reports.drawing import timeline_drawing
from harness.reports.summary import fault_family

FOLDER = "details"
CHUNK = 100  # cases per detail file
FORMAT = 1  # of the documents below; the page and its data are always written together


def chunk_name(index: int) -> str:
    """The detail file's name (without folder and ``.js``) of the case at ``index``."""
    return f"{index // CHUNK:04d}"


def pack(name: str, document: Mapping[str, Any]) -> str:
    """A script that hands ``document`` to the page under ``name``."""
    text = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    packed = base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")
    return f'(window.tearlineData = window.tearlineData || {{}})["{name}"] = "{packed}";\n'


def _table(values: Sequence[str]) -> tuple[list[str], list[int]]:
    """Distinct values in order of appearance, and each value's number in that list."""
    numbers: dict[str, int] = {}
    refs = [numbers.setdefault(v, len(numbers)) for v in values]
    return list(numbers), refs


def index_document(results: Sequence[CaseResult], groups: caseview.Scenarios) -> dict[str, Any]:
    framings, framing = _table([r.framing for r in results])
    families, family = _table([fault_family(r) for r in results])
    outcome_number = {outcome: i for i, outcome in enumerate(OUTCOMES)}
    firsts = [results[members[0]] for members in groups.members]
    return {
        "format": FORMAT,
        "chunk": CHUNK,
        "outcomes": list(OUTCOMES),
        "framings": framings,
        "families": families,
        "scenarios": [[r.scenario, r.file, r.line] for r in firsts],
        "id": [r.case_id for r in results],
        "outcome": [outcome_number[r.outcome] for r in results],
        "framing": framing,
        "family": family,
        "scenario": list(groups.of_case),
        "diagnosis": [r.diagnosis for r in results],
        "params": [caseview.params_text(r) for r in results],
        "verdict": [caseview.verdict(r) for r in results],
    }


def case_detail(result: CaseResult, pcap: str | None) -> dict[str, Any]:
    """Everything the page shows of one case beyond its index entry."""
    faults, more = caseview.shown_faults(result)
    return {
        "glance": caseview.glance(result),
        "facts": caseview.facts(result),
        "pcap": pcap,
        "checks": [caseview.check_cells(c) for c in result.checks],
        "drawing": shapes.data(timeline_drawing(result)),
        "faults": [caseview.fault_cells(f) for f in faults],
        "faults_more": more,
    }


def chunk_document(
    results: Sequence[CaseResult],
    first: int,
    *,
    pcaps: Mapping[int, str],
    sources: Mapping[tuple[str, int], str],
    groups: caseview.Scenarios,
) -> dict[str, Any]:
    """The details of ``results[first:first + CHUNK]``, with the source of each scenario they
    come from (once per file, by scenario number)."""
    indices = range(first, min(first + CHUNK, len(results)))
    scenario_sources = {
        str(groups.of_case[i]): sources.get((results[i].file, results[i].line), "") for i in indices
    }
    return {
        "first": first,
        "cases": [case_detail(results[i], pcaps.get(i)) for i in indices],
        "sources": scenario_sources,
    }


def chunk_starts(cases: int) -> range:
    """The first case of each detail file."""
    return range(0, cases, CHUNK)


def index_file(results: Sequence[CaseResult], groups: caseview.Scenarios) -> tuple[str, str]:
    """(path relative to the report folder, text) of the case index."""
    return f"{FOLDER}/cases.js", pack("cases", index_document(results, groups))


def chunk_file(
    results: Sequence[CaseResult],
    first: int,
    *,
    pcaps: Mapping[int, str],
    sources: Mapping[tuple[str, int], str],
    groups: caseview.Scenarios,
) -> tuple[str, str]:
    """(path relative to the report folder, text) of the detail file starting at ``first``."""
    name = chunk_name(first)
    document = chunk_document(results, first, pcaps=pcaps, sources=sources, groups=groups)
    return f"{FOLDER}/{name}.js", pack(name, document)


def files(
    results: Sequence[CaseResult],
    *,
    pcaps: Mapping[int, str],
    sources: Mapping[tuple[str, int], str],
    groups: caseview.Scenarios | None = None,
) -> Iterator[tuple[str, str]]:
    """(path relative to the report folder, text) of every data file, the index first."""
    groups = groups or caseview.scenarios(results)
    yield index_file(results, groups)
    for first in chunk_starts(len(results)):
        yield chunk_file(results, first, pcaps=pcaps, sources=sources, groups=groups)
