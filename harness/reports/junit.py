"""``junit.xml``: one test case per case, one test suite per scenario file.

The JUnit dialect read by Jenkins, GitLab, GitHub Actions reporters, Azure Pipelines and
CircleCI: ``testsuites > testsuite > testcase``. A case that is not a pass carries
``<failure>`` when the consumer is at fault (``fail``, ``violation``, ``no_verdict``) and
``<error>`` when nothing could be concluded about it (``error``, ``inconclusive``), with the
diagnosis as the message, so a CI page shows why without opening anything else.
"""

from __future__ import annotations

import platform
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from harness.judging.results import CaseResult, Grade, Outcome, replay_command
from harness.reports.refused import JUNIT_SUITE, RefusedFile
from harness.reports.summary import observed_label

FAILURES = frozenset({Outcome.FAIL, Outcome.VIOLATION, Outcome.NO_VERDICT})
ERRORS = frozenset({Outcome.ERROR, Outcome.INCONCLUSIVE})
# Characters XML 1.0 cannot hold at all, not even escaped (an external consumer's stderr can
# bring them into a diagnosis): they become U+FFFD rather than an unreadable file.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def _names(result: CaseResult) -> tuple[str, str]:
    """(classname, name): the file stem, and the case id after ``stem::``, so the pair reads
    like the case id in every CI view."""
    stem = PurePath(result.file).stem if result.file else "scenario"
    _, sep, rest = result.case_id.partition("::")
    return stem, rest if sep else result.case_id


def _details(result: CaseResult, pcap: str | None) -> str:
    lines = [
        result.diagnosis,
        "",
        f"expected: {result.expected}",
        f"observed: {observed_label(result)}",
    ]
    for check in result.checks:
        mark = {True: "ok  ", False: "FAIL", None: "-   "}[check.ok]
        lines.append(f"  {mark} {check.name:<6} {check.evidence}")
    lines += ["", f"seed: {result.seed}", f"replay: {replay_command(result)}"]
    if pcap:
        lines.append(f"pcap: {pcap}")
    return "\n".join(lines)


def _testcase(result: CaseResult, pcap: str | None) -> ET.Element:
    classname, name = _names(result)
    case = ET.Element(
        "testcase",
        {
            "classname": xml_text(classname),
            "name": xml_text(name),
            "file": xml_text(result.file),
            "line": str(result.line),
            "time": f"{result.duration_s:.3f}",
        },
    )
    if result.grade is not None or result.undetectable:  # first, as pytest writes them
        properties = ET.SubElement(case, "properties")
        if result.grade is not None:
            ET.SubElement(properties, "property", {"name": "grade", "value": result.grade})
        for note in result.undetectable:  # a fault no consumer of the protocol can see
            ET.SubElement(properties, "property", {"name": "undetectable", "value": note})
    tag = _failure_tag(result)
    if tag is not None:
        attributes = {"message": xml_text(result.diagnosis), "type": result.outcome}
        ET.SubElement(case, tag, attributes).text = xml_text(_details(result, pcap))
    out = ET.SubElement(case, "system-out")
    out.text = xml_text(f"seed: {result.seed}\nreplay: {replay_command(result)}\n")
    return case


def _failure_tag(result: CaseResult) -> str | None:
    """``failure``, ``error`` or None (a pass). A consumer other than the reference one fails
    on a ``failed`` grade only; its other grades pass (``docs/grades.md``)."""
    if result.outcome in ERRORS:
        return "error"
    if result.grade is not None:
        return "failure" if result.grade is Grade.FAILED else None
    return "failure" if result.outcome in FAILURES else None


def _suite(name: str, cases: Sequence[tuple[CaseResult, str | None]], timestamp: str) -> ET.Element:
    results = [r for r, _ in cases]
    suite = ET.Element(
        "testsuite",
        {
            "name": xml_text(name),
            "tests": str(len(results)),
            "failures": str(sum(_failure_tag(r) == "failure" for r in results)),
            "errors": str(sum(_failure_tag(r) == "error" for r in results)),
            "skipped": "0",
            "time": f"{sum(r.duration_s for r in results):.3f}",
            "timestamp": timestamp,
            "hostname": platform.node() or "localhost",
        },
    )
    suite.extend(_testcase(r, pcap) for r, pcap in cases)
    return suite


def _refused_suite(refused: Sequence[RefusedFile], timestamp: str) -> ET.Element:
    """One ``<error>`` test case per scenario file the run left out."""
    suite = ET.Element(
        "testsuite",
        {
            "name": JUNIT_SUITE,
            "tests": str(len(refused)),
            "failures": "0",
            "errors": str(len(refused)),
            "skipped": "0",
            "time": "0.000",
            "timestamp": timestamp,
            "hostname": platform.node() or "localhost",
        },
    )
    for item in refused:
        line = item.problems[0].line if item.problems else 0
        attributes = {"classname": xml_text(item.file), "name": "load", "file": xml_text(item.file)}
        case = ET.SubElement(suite, "testcase", {**attributes, "line": str(line), "time": "0.000"})
        message = {"message": xml_text(str(item.problems[0])), "type": "scenario-file"}
        ET.SubElement(case, "error", message).text = xml_text(item.text)
    return suite


def junit_xml(
    results: Sequence[CaseResult],
    *,
    pcaps: Mapping[int, str],
    elapsed_s: float,
    timestamp: str,
    refused: Sequence[RefusedFile] = (),
) -> bytes:
    """The document, UTF-8 with an XML declaration. ``timestamp``: ISO 8601 without a zone
    (the JUnit schema's ``xs:dateTime`` as Jenkins writes it); ``pcaps`` by case index;
    ``refused``: the scenario files the run left out, each an ``<error>`` in a suite of their
    own (as pytest reports a module it cannot collect)."""
    by_file: dict[str, list[tuple[CaseResult, str | None]]] = {}
    for index, result in enumerate(results):
        by_file.setdefault(result.file or "(no file)", []).append((result, pcaps.get(index)))
    root = ET.Element(
        "testsuites",
        {
            "name": "tearline",
            "tests": str(len(results) + len(refused)),
            "failures": str(sum(_failure_tag(r) == "failure" for r in results)),
            "errors": str(sum(_failure_tag(r) == "error" for r in results) + len(refused)),
            "skipped": "0",
            "time": f"{elapsed_s:.3f}",
        },
    )
    if refused:
        root.append(_refused_suite(refused, timestamp))
    root.extend(_suite(name, cases, timestamp) for name, cases in by_file.items())
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document
