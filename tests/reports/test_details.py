"""``details/``: the case index and the detail chunks the page loads on demand, as scripts that
hand one compressed JSON document each to the page."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.judging.results import OUTCOMES, CaseResult, Target
from harness.reports import caseview, details, shapes
from harness.reports.details import CHUNK, case_detail, chunk_name, files, index_document, pack
from harness.reports.drawing import timeline_drawing
from tests.reports.conftest import by_name

SCRIPT = re.compile(
    r'\(window\.tearlineData = window\.tearlineData \|\| \{\}\)\["(\w+)"\] = "([A-Za-z0-9+/=]*)";\n'
)


def unpack(text: str) -> tuple[str, Any]:
    """The name and document of a data file, as the page's script reads it."""
    match = SCRIPT.fullmatch(text)
    assert match is not None, text[:200]
    return match.group(1), json.loads(zlib.decompress(base64.b64decode(match.group(2))))


def test_pack_round_trips() -> None:
    document = {"text": 'é \u2028 </script> "quoted"', "n": [1, 2.5, None]}
    assert unpack(pack("0003", document)) == ("0003", document)


def test_chunk_names() -> None:
    assert [chunk_name(i) for i in (0, CHUNK - 1, CHUNK, 123_456)] == [
        "0000",
        "0000",
        "0001",
        "1234",
    ]


def test_the_index_lists_every_case(results: Sequence[CaseResult]) -> None:
    groups = caseview.scenarios(results)
    index = index_document(results, groups)
    assert index["id"] == [r.case_id for r in results]
    assert [index["outcomes"][o] for o in index["outcome"]] == [r.outcome for r in results]
    assert index["outcomes"] == list(OUTCOMES)
    assert [index["framings"][f] for f in index["framing"]] == [r.framing for r in results]
    names = [index["scenarios"][s][0] for s in index["scenario"]]
    assert names == [r.scenario for r in results]
    assert index["params"][9] == "offset=150" and index["verdict"][4] == "-"
    assert index["chunk"] == CHUNK and len(index["scenarios"]) == len(groups.members) == 9


def test_a_detail_says_what_the_page_says(results: Sequence[CaseResult]) -> None:
    result = by_name(results, "reconnect")
    detail = case_detail(result, "pcaps/0003-x.pcap")
    assert detail["facts"] == caseview.facts(result)
    assert detail["glance"] == caseview.glance(result)
    assert detail["checks"] == [caseview.check_cells(c) for c in result.checks]
    assert detail["drawing"] == shapes.data(timeline_drawing(result))
    assert detail["faults"] == [caseview.fault_cells(f) for f in result.timeline.faults]
    assert detail["pcap"] == "pcaps/0003-x.pcap" and detail["faults_more"] == 0


def test_chunks_cover_every_case_once(synthetic: Sequence[CaseResult]) -> None:
    some = synthetic[: 2 * CHUNK + 17]
    written = dict(files(some, pcaps={5: "pcaps/0005-x.pcap"}, sources={}))
    assert list(written) == ["details/cases.js", *(f"details/000{n}.js" for n in range(3))]
    seen: list[int] = []
    for name, text in list(written.items())[1:]:
        key, chunk = unpack(text)
        assert name == f"details/{key}.js"
        seen += range(chunk["first"], chunk["first"] + len(chunk["cases"]))
    assert seen == list(range(len(some)))
    assert unpack(written["details/0000.js"])[1]["cases"][5]["pcap"] == "pcaps/0005-x.pcap"


def test_sources_once_per_scenario_of_the_chunk(results: Sequence[CaseResult]) -> None:
    groups = caseview.scenarios(results)
    sources = {(r.file, r.line): f"source of {r.scenario}" for r in results}
    chunk = details.chunk_document(results, 0, pcaps={}, sources=sources, groups=groups)
    assert chunk["sources"] == {str(n): f"source of {key[1]}" for n, key in enumerate(groups.keys)}


def test_the_report_folder_holds_them(report_dir: Path, results: Sequence[CaseResult]) -> None:
    folder = report_dir / "details"
    assert sorted(p.name for p in folder.iterdir()) == ["0000.js", "cases.js"]
    name, index = unpack((folder / "cases.js").read_text("utf-8"))
    assert name == "cases" and index["id"] == [r.case_id for r in results]
    _, chunk = unpack((folder / "0000.js").read_text("utf-8"))
    clean = chunk["sources"][str(index["scenario"][0])]
    assert '<script>alert("not markup")</script>' in clean  # raw: the page sets it as text


def test_a_consumer_programs_start_up_is_a_fact_of_its_own(results: Sequence[CaseResult]) -> None:
    reference = results[0]
    program = dataclasses.replace(reference, target=Target(consumer=("prog",)), startup_s=1.234)
    never = dataclasses.replace(program, startup_s=None)
    shown = [
        dict((label, value) for label, value, _ in caseview.facts(r)).get("start-up")
        for r in (reference, program, never)
    ]
    assert shown == [None, "1234 ms until it connected (not in the deadline)", "did not connect"]
