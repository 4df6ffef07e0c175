"""results.json: valid against its schema, the same facts as the results, documented, and read
by jq as the docs show."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.judging.results import CaseResult
from harness.reports import results_json
from harness.reports.results_json import RESULTS_VERSION, jsonable, schema
from harness.scenario.model import Span
from tests.reports.conftest import COMMAND, by_name, tool

DOCS = Path(__file__).parents[2] / "docs" / "reports.md"


@pytest.fixture(scope="module")
def document(report_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((report_dir / "results.json").read_text("utf-8"))
    return loaded


def test_document_validates_against_its_schema(document: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.Draft202012Validator(schema()).validate(document)


def test_schema_rejects_a_broken_document(document: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(document))
    broken["cases"][0]["outcome"] = "passed"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema()).validate(broken)


def test_run_facts(document: dict[str, Any]) -> None:
    assert document["version"] == RESULTS_VERSION == 2
    assert document["tool"] == "tearline"
    assert document["command"] == list(COMMAND)
    assert document["elapsed_s"] == 1.25
    assert document["pcap"] == "all"
    assert document["detail"] == "failing"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", document["created"])


def test_totals_count_the_outcomes(document: dict[str, Any], results: Sequence[CaseResult]) -> None:
    assert document["totals"] == {
        "cases": 15,
        "pass": 11,
        "fail": 1,
        "violation": 0,
        "no_verdict": 1,
        "inconclusive": 1,
        "error": 1,
    }
    assert len(document["cases"]) == len(results) == 15


def test_each_case_is_its_result(document: dict[str, Any], results: Sequence[CaseResult]) -> None:
    for record, result in zip(document["cases"], results, strict=True):
        assert record["id"] == result.case_id
        assert record["seed"] == result.seed
        assert record["outcome"] == result.outcome
        assert record["diagnosis"] == result.diagnosis
        segments = record["timeline"]["segments"]
        if result.passed:  # detail="failing": faults and ends, not the rest
            assert (segments, record["checks"], record["timeline"]["legs"]) == (None, None, None)
            assert len(record["timeline"]["ends"]) == len(result.timeline.ends)
        else:
            assert len(segments) == len(result.timeline.segments)
            assert [c["name"] for c in record["checks"]] == [c.name for c in result.checks]
        # --pcap all: every case that reached the proxy (the harness error never did; nor
        # does the hung case on a machine so loaded that its deadline passes first)
        assert (record["pcap"] is None) == (not result.timeline.legs)


def test_a_failing_case_in_detail(document: dict[str, Any], results: Sequence[CaseResult]) -> None:
    result = by_name(results, "wrong-expectation")
    record = next(c for c in document["cases"] if c["id"] == result.case_id)
    assert record["outcome"] == "fail"
    assert record["expected"] == "COMPLETE_EXPLICIT"
    assert record["observed"]["verdict"] == "PARTIAL_MID_TOKEN"
    assert record["observed"]["complete"] is False
    assert record["fault_kinds"] == ["kill"]
    assert record["fault_family"] == "kill"
    assert record["replay"] == (
        f"tearline run {result.file} -k mixed::wrong-expectation --seed {result.seed}"
    )
    first_end = record["timeline"]["ends"][0]
    assert (first_end["connection"], first_end["direction"], first_end["how"]) == (
        1,
        "downstream",
        "fin",
    )


def test_detail_all_lists_every_segment(results: Sequence[CaseResult]) -> None:
    run = results_json.RunInfo(("tearline",), "2025-01-01T00:00:00Z", 1.0, "none", "test")
    written = results_json.dumps(results_json.results_document(results, run, {}, "all"))
    document = json.loads(written)
    jsonschema.Draft202012Validator(schema()).validate(document)
    assert document["detail"] == "all"
    listed = [len(c["timeline"]["segments"]) for c in document["cases"]]
    assert listed == [len(r.timeline.segments) for r in results]
    assert sum(listed) > 0
    with pytest.raises(ValueError, match="detail"):
        results_json.results_document(results, run, {}, "some")


def test_sweep_params_and_missing_reports(document: dict[str, Any]) -> None:
    sweep = [c for c in document["cases"] if c["scenario"] == "cut-sweep"]
    assert [c["params"] for c in sweep] == [{"offset": o} for o in range(0, 150 * len(sweep), 150)]
    hung = next(c for c in document["cases"] if c["scenario"] == "hung")
    assert hung["observed"] is None and hung["observed_label"] == "-"


def test_jsonable_sweep_values() -> None:
    assert jsonable((1, "a", None, 2.5, True)) == [1, "a", None, 2.5, True]
    assert jsonable(Span(0, "end", 3)) == {"start": 0, "stop": "end", "step": 3}
    assert jsonable(b"x") == "b'x'"


def test_every_schema_key_is_documented() -> None:
    docs = DOCS.read_text("utf-8")
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            keys.update(node.get("properties", {}))
            for value in node.values():
                walk(value)

    walk(schema())
    missing = sorted(key for key in keys if f"`{key}`" not in docs)
    assert missing == []


def test_dumps_refuses_nan() -> None:
    with pytest.raises(ValueError):
        results_json.dumps({"x": float("nan")})


def documented_jq_lines() -> list[str]:
    """The shell lines of the results.json section's example block."""
    section = DOCS.read_text("utf-8").split("## results.json", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return block.group(1).splitlines()


def test_the_documented_jq_lines_read_the_file(report_dir: Path, document: dict[str, Any]) -> None:
    """jq (Debian's) reads results.json as the docs say; the last line's ``| sh`` is left off
    (it would run the replay): what it would run is the first failing case's replay."""
    jq = tool("jq")
    path = str(report_dir / "results.json")
    outputs = []
    for line in documented_jq_lines():
        command = line.replace("reports/nightly/results.json", path).removesuffix(" | sh")
        assert command.startswith("jq ")
        command = command.replace("jq ", f"{jq} ", 1)
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
        outputs.append(done.stdout)
    cases = document["cases"]
    assert json.loads(outputs[0]) == document["totals"]
    listed = [f"{c['id']}\t{c['diagnosis']}\n" for c in cases if c["outcome"] != "pass"]
    assert outputs[1] == "".join(listed) != ""
    first_fail = next(c for c in cases if c["outcome"] == "fail")
    assert outputs[2] == first_fail["replay"] + "\n"
    assert first_fail["replay"].startswith("tearline run ")
    assert len(outputs) == 3
