"""The pytest plugin, through pytester: collection, outcomes, -k, -n 2, broken files, JUnit,
sharding."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points

import pytest

from harness.pytest_plugin import shard_of
from harness.scenario.shards import assign

pytest_plugins = ["pytester"]

GOOD = """\
- name: clean
  description: five messages arrive.
  link: {framing: length-prefixed, payload: messages}
  expect: {verdict: MESSAGE_COMPLETE, accepted_messages: 5}
- name: wrong
  description: expects a timeout that never comes.
  link: {framing: ndjson, payload: messages}
  expect: {verdict: IDLE_TIMEOUT}
- name: cut
  description: a FIN anywhere in message 2 leaves the stream incomplete.
  link: {framing: length-prefixed, payload: messages}
  faults:
    - {kind: kill, how: fin, at: {frame: 2, fraction: 0.5}}
  sweep:
    link.messages.count: [3, 4, 5]
  expect: {complete: false}
"""
BROKEN = "- name: Bad Name\n  description: x\n"
IDS = [
    "scenarios/good.yaml::clean",
    "scenarios/good.yaml::wrong",
    "scenarios/good.yaml::cut[count=3]",
    "scenarios/good.yaml::cut[count=4]",
    "scenarios/good.yaml::cut[count=5]",
]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "good.yaml").write_text(GOOD)
    (pytester.path / "ci.yaml").write_text("not: a scenario\n")  # outside scenarios/: ignored
    return pytester


def test_registered_as_an_entry_point() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins["tearline"] == "harness.pytest_plugin"


def test_collects_one_item_per_case(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert [line for line in result.outlines if "::" in line] == IDS


def test_a_file_named_on_the_command_line_is_collected(suite: pytest.Pytester) -> None:
    (suite.path / "extra.yml").write_text(GOOD.partition("- name: wrong")[0])
    result = suite.runpytest("extra.yml", "--collect-only", "-q")
    assert [line for line in result.outlines if "::" in line] == ["extra.yml::clean"]


def test_outcomes_and_the_diagnosis_instead_of_a_traceback(suite: pytest.Pytester) -> None:
    result = suite.runpytest("scenarios")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ good::wrong _*",
            "fail: expected verdict IDLE_TIMEOUT, got MESSAGE_COMPLETE",
            "  expected  IDLE_TIMEOUT",
            "  FAIL expect expected verdict IDLE_TIMEOUT, got MESSAGE_COMPLETE",
            "  replay    tearline run * -k good::wrong --seed *",
            "FAILED scenarios/good.yaml::wrong - fail: expected verdict IDLE_TIMEOUT*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "runtest" not in result.stdout.str()


def test_k_selects_cases(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-k", "cut and not 4")
    result.assert_outcomes(passed=2, deselected=3)


def test_xdist_two_workers(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*created: 2/2 workers*"])


def test_a_broken_file_fails_alone(suite: pytest.Pytester) -> None:
    (suite.path / "scenarios" / "broken.yaml").write_text(BROKEN)
    result = suite.runpytest("scenarios")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ broken::invalid _*",
            "*broken.yaml:1: name: must be lowercase letters*",
            "*broken.yaml:1: link: required key missing",
            "FAILED scenarios/broken.yaml::invalid - *",
        ]
    )


def test_junitxml_message_leads_with_the_diagnosis(suite: pytest.Pytester) -> None:
    suite.runpytest("--junitxml=out.xml")
    root = ET.parse(suite.path / "out.xml").getroot()
    failures = [(c.get("name"), c.find("failure")) for c in root.iter("testcase")]
    failed = [(name, f.get("message", "")) for name, f in failures if f is not None]
    assert [(name, message.splitlines()[0]) for name, message in failed] == [
        ("wrong", "fail: expected verdict IDLE_TIMEOUT, got MESSAGE_COMPLETE")
    ]


def test_shards_split_the_cases(suite: pytest.Pytester) -> None:
    seen = []
    for k in (1, 2):
        result = suite.runpytest("--tearline-shard", f"{k}/2", "--collect-only", "-q")
        seen.append([line for line in result.outlines if "::" in line])
    assert sorted(seen[0] + seen[1]) == sorted(IDS)
    assert seen[0] == [i for i in IDS if shard_of(i.replace("scenarios/good.yaml", "good"), 2) == 0]
    bad = suite.runpytest("--tearline-shard", "3/2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_shards_can_be_balanced_by_a_previous_runs_durations(suite: pytest.Pytester) -> None:
    ids = [i.replace("scenarios/good.yaml", "good") for i in IDS]
    durations = {ids[0]: 1.0, ids[1]: 9.0, ids[4]: 1.0}
    previous = suite.path / "previous.json"
    previous.write_text(
        json.dumps({"cases": [{"id": i, "duration_s": d} for i, d in durations.items()]})
    )
    balanced = assign(ids, 2, durations)
    assert balanced != [shard_of(i, 2) for i in ids]  # not the split by hash
    for k in (1, 2):
        options = ("--tearline-shard", f"{k}/2", "--tearline-shard-durations", str(previous))
        result = suite.runpytest(*options, "--collect-only", "-q")
        assert [line for line in result.outlines if "::" in line] == [
            i for i, s in zip(IDS, balanced, strict=True) if s == k - 1
        ]
    previous.write_text("[]")
    bad = suite.runpytest("--tearline-shard", "1/2", "--tearline-shard-durations", str(previous))
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_works_beside_pytest_trio_mode(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\ntrio_mode = true\n")  # as this project's own pytest settings
    result = suite.runpytest("-k", "clean or wrong")
    result.assert_outcomes(passed=1, failed=1, deselected=3)
