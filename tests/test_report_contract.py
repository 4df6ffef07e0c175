"""The consumer report: the documented example parses, round trips are exact, bad reports are
refused with a reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reference_impl.report import (
    MAX_ACCEPTED,
    MAX_DETAIL_CHARS,
    Accepted,
    AcceptedPast,
    ConnectionSummary,
    ConsumerReport,
    Recorded,
    ReportFormatError,
    Tally,
    accepted_total,
    bounded,
    from_json,
    to_json,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "consumer-contract.md"


def test_the_documented_example_parses() -> None:
    block = re.search(r"```json\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    report = from_json(json.dumps(json.loads(block.group(1))))
    assert report.verdict == "ERR_ZPARQL_STREAM_TRUNCATED"
    assert report.complete is False
    assert report.accepted == (
        Accepted("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 4, 1),
    )


def test_round_trip_is_exact() -> None:
    report = ConsumerReport(
        verdict="RESULT_VERIFIED",
        complete=True,
        accepted=(Accepted.of(b"test", 2),),
        connections=(ConnectionSummary("stream-end", "MESSAGE_COMPLETE", None, 3, 99),),
        reads=3,
        recorded=Recorded(message_boundary_delimiter="LF", expected_message_size=7),
    )
    assert from_json(to_json(report)) == report


def test_accepted_digest_is_sha256_of_the_bytes() -> None:
    assert Accepted.of(b"test").sha256 == (
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("not json", "not JSON"),
        ("[]", "report: expected an object"),
        ('{"verdict": "X"}', "report"),
        ('{"verdict": "X", "complete": true, "typo": 1}', "unknown keys"),
        ('{"verdict": "X", "complete": "yes"}', "'complete' a boolean"),
        ('{"verdict": "X", "complete": true, "accepted": [1]}', "accepted[0]"),
        ('{"verdict": "X", "complete": true, "recorded": {"nope": 1}}', "recorded"),
    ],
)
def test_bad_reports_are_refused_with_the_place(text: str, where: str) -> None:
    with pytest.raises(ReportFormatError) as info:
        from_json(text)
    assert where in str(info.value)


def test_a_report_within_bounds_is_kept_as_it_is() -> None:
    report = ConsumerReport("MESSAGE_COMPLETE", True, detail="fine")
    assert bounded(report) == (report, ())


def test_an_oversized_report_is_cut_and_says_what_was_cut() -> None:
    accepted = tuple(Accepted.of(b"m%d" % i) for i in range(MAX_ACCEPTED + 5))
    report = ConsumerReport("X", False, accepted=accepted, detail="d" * (MAX_DETAIL_CHARS + 10))
    cut, notes = bounded(report)
    assert (len(cut.accepted), len(cut.detail)) == (MAX_ACCEPTED, MAX_DETAIL_CHARS + 1)
    assert cut.accepted == accepted[:MAX_ACCEPTED]
    # the messages past the list are kept as a count and a running hash, not cut
    assert cut.accepted_past == (
        AcceptedPast(1, 5, Tally.of(a.sha256 for a in accepted[MAX_ACCEPTED:]).digest),
    )
    assert accepted_total(cut) == MAX_ACCEPTED + 5
    assert notes == (f"detail cut to {MAX_DETAIL_CHARS} of {MAX_DETAIL_CHARS + 10} characters",)


def test_each_connection_lists_its_own_first_messages() -> None:
    first = [Accepted.of(b"a%d" % i, 1) for i in range(MAX_ACCEPTED + 2)]
    second = [Accepted.of(b"b%d" % i, 2) for i in range(3)]
    report = ConsumerReport("X", False, accepted=(*first, *second))
    cut, notes = bounded(report)
    assert (cut.accepted, notes) == ((*first[:MAX_ACCEPTED], *second), ())
    assert [(p.connection, p.count) for p in cut.accepted_past] == [(1, 2)]


def test_a_tallied_report_round_trips() -> None:
    report = ConsumerReport("X", True, accepted_past=(AcceptedPast(1, 7, "ab" * 32),))
    assert from_json(to_json(report)) == report
