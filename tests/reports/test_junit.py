"""junit.xml: valid against the JUnit schema CI systems read; one test case per case."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest
import xmlschema

from harness.judging.results import GRADES, CaseResult, Outcome, Target
from harness.reports.junit import junit_xml, xml_text
from tests.reports.conftest import by_name

XSD = Path(__file__).parent / "junit.xsd"


@pytest.fixture(scope="module")
def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


@pytest.fixture(scope="module")
def root(report_dir: Path) -> ET.Element:
    return ET.parse(report_dir / "junit.xml").getroot()


def test_validates_against_the_junit_schema(
    report_dir: Path, junit_schema: xmlschema.XMLSchema
) -> None:
    junit_schema.validate(str(report_dir / "junit.xml"))


def test_the_schema_can_say_no(junit_schema: xmlschema.XMLSchema) -> None:
    two_results = (
        '<testsuites tests="1" failures="1" errors="1"><testsuite name="s" tests="1" failures="1"'
        ' errors="1"><testcase name="n" classname="c" time="0"><failure message="m" type="t"/>'
        '<error message="m" type="t"/></testcase></testsuite></testsuites>'
    )
    assert not junit_schema.is_valid(two_results)


def test_one_testcase_per_case_grouped_by_file(
    root: ET.Element, results: Sequence[CaseResult]
) -> None:
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [results[0].file]
    cases = suites[0].findall("testcase")
    assert [f"{c.get('classname')}::{c.get('name')}" for c in cases] == [r.case_id for r in results]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("15", "2", "2")


def test_failure_message_is_the_diagnosis(root: ET.Element, results: Sequence[CaseResult]) -> None:
    expected = {
        "wrong-expectation": "failure",
        "hung": "failure",
        "missing-frame": "error",
        "never-fires": "error",
    }
    for scenario, tag in expected.items():
        result = by_name(results, scenario)
        case = next(c for c in root.iter("testcase") if c.get("name") == scenario)
        problem = case.find(tag)
        assert problem is not None, scenario
        assert problem.get("message") == result.diagnosis
        assert problem.get("type") == result.outcome
        assert f"--seed {result.seed}" in (problem.text or "")
    clean = next(c for c in root.iter("testcase") if c.get("name") == "clean")
    assert clean.find("failure") is None and clean.find("error") is None


def test_text_xml_cannot_hold_is_replaced(
    results: Sequence[CaseResult], junit_schema: xmlschema.XMLSchema
) -> None:
    hostile = dataclasses.replace(results[0], diagnosis="exit 3: \x00\x1b[31mred\x1b[0m </x>")
    hostile = dataclasses.replace(hostile, outcome=Outcome.ERROR)
    document = junit_xml([hostile], pcaps={}, elapsed_s=0.5, timestamp="2025-01-02T03:04:05")
    junit_schema.validate(document.decode("utf-8"))
    problem = ET.fromstring(document).find("testsuite/testcase/error")
    assert problem is not None
    assert problem.get("message") == "exit 3: \ufffd\ufffd[31mred\ufffd[0m </x>"
    assert xml_text("a\tb\nc\r\ud800") == "a\tb\nc\r\ufffd"


def test_a_foreign_consumer_fails_only_on_a_failed_grade(
    results: Sequence[CaseResult], junit_schema: xmlschema.XMLSchema
) -> None:
    """A consumer other than the reference one: a ``failed`` grade is a failure, the other
    grades pass, each with a ``grade`` property (docs/grades.md)."""
    base = next(r for r in results if r.outcome is Outcome.FAIL)
    foreign = Target(consumer=("my-consumer",))
    graded = [dataclasses.replace(base, case_id=f"g::{g}", target=foreign, grade=g) for g in GRADES]
    xml = junit_xml(graded, pcaps={}, elapsed_s=1.0, timestamp="2026-12-01T00:00:00")
    junit_schema.validate(xml.decode())
    cases = ET.fromstring(xml).iter("testcase")
    seen = {
        case.get("name"): (
            [child.tag for child in case if child.tag in ("failure", "error")],
            [p.get("value") for p in case.iterfind("properties/property")],
        )
        for case in cases
    }
    assert seen == {
        "strict": ([], ["strict"]),
        "non-strict": ([], ["non-strict"]),
        "failed": (["failure"], ["failed"]),
        "informational": ([], ["informational"]),
    }
