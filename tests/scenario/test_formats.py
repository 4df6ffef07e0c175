"""Format versions and the deprecation table (``harness.scenario.versions``, ``formats``,
``renames``): which version a file is read in, and how an entry of the table, a renamed key or
value or a meaning that changed in a later version, is read with a warning and rewritten by
``upgrade`` alike. The later versions here are made up: a table of tests, not the real one."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from harness.config.issues import SchemaIssue
from harness.scenario import CURRENT_FORMAT, FORMAT_RULES, json_schema, read_text
from harness.scenario.renames import RenamedKey, RenamedValue
from harness.scenario.upgrade import upgrade_text
from harness.scenario.versions import FormatRules, FormatVersion

ROOT = Path(__file__).resolve().parents[2]
V1 = FormatVersion(1, "2026-11-29", "first")
V2 = FormatVersion(2, "2027-01-01", "a made-up second version")

SCENARIO = """\
name: one
description: d
link:
  framing: sse
  payload: tokens
  tokens: {profile: generic}
  consumer: {idle_ms: 800}
faults:
  - {kind: freeze, at: {frame: 2}, length_ms: 100}
  - {kind: kill, how: reset, at: {frame: 3}}
sweep:
  link.consumer.idle_ms: [700, 900]
  faults[1].how: [reset, fin]
expect: {complete: false}
"""
DAY = "2027-01-01"
RENAMES = (
    RenamedKey("consumer-idle", DAY, "link.consumer", "idle_ms", "idle_timeout_ms"),
    RenamedValue("freeze", DAY, "faults", "kind", "freeze", "stall"),
    RenamedKey("stall-length", DAY, "faults", "length_ms", "duration_ms", ("stall", "freeze")),
    RenamedValue("kill-reset", DAY, "faults", "how", "reset", "rst", ("kill",)),
)
#: in "format 1", profile generic meant what "format 2" calls openai
MEANING = RenamedValue(
    "generic-meant-openai", DAY, "link.tokens", "profile", "generic", "openai", up_to=1
)
ONE = FormatRules((V1,), RENAMES)
TWO = FormatRules((V1, V2), (MEANING,))


def _messages(issues: tuple[SchemaIssue, ...]) -> list[tuple[int, str, str]]:
    return [(i.line, i.key_path, i.message) for i in issues]


def test_renamed_keys_and_values_are_read_as_their_new_forms_with_a_warning() -> None:
    load = read_text(SCENARIO, "x.yaml", formats=ONE)
    assert load.issues == ()
    (scenario,) = load.scenarios
    stall, kill = scenario.faults
    assert (stall.kind, stall.duration_ms, kill.how) == ("stall", 100.0, "rst")  # type: ignore[attr-defined]
    assert scenario.link.consumer.idle_timeout_ms == 800.0
    assert [(a.path, a.values) for a in scenario.sweep] == [
        ("link.consumer.idle_timeout_ms", (700.0, 900.0)),
        ("faults[1].how", ("rst", "fin")),
    ]
    tail = " instead (`tearline upgrade` rewrites the file)"
    assert [(w.line, w.key_path, w.message.split("; write ")[1]) for w in load.warnings] == [
        (7, "link.consumer.idle_ms", "`idle_timeout_ms`" + tail),
        (9, "faults[0].kind", "`kind: stall`" + tail),
        (9, "faults[0].length_ms", "`duration_ms`" + tail),
        (10, "faults[1].how", "`how: rst`" + tail),
        (12, "sweep.link.consumer.idle_ms", "`link.consumer.idle_timeout_ms`" + tail),
        (13, "sweep.faults[1].how[0]", "`how: rst`" + tail),
    ]
    assert str(load.warnings[0]).startswith(
        "x.yaml:7: warning: link.consumer.idle_ms: deprecated (consumer-idle): key idle_ms;"
    )


def test_upgrade_writes_the_renames_and_nothing_else() -> None:
    result = upgrade_text(SCENARIO, "x.yaml", formats=ONE)
    assert result.problems == ()
    assert result.text == (
        SCENARIO.replace("idle_ms", "idle_timeout_ms")
        .replace("kind: freeze", "kind: stall")
        .replace("length_ms", "duration_ms")
        .replace("how: reset", "how: rst")
        .replace("[reset, fin]", "[rst, fin]")
    )
    assert [(c.line, c.text) for c in result.changes][:2] == [
        (7, "key idle_ms: wrote `idle_timeout_ms` instead"),
        (9, "kind: freeze: wrote `kind: stall` instead"),
    ]
    assert read_text(result.text, "x.yaml", formats=ONE).warnings == ()


def test_a_meaning_change_rewrites_only_files_that_name_the_older_version() -> None:
    older = "format: 1\n" + SCENARIO.replace("idle_ms", "idle_timeout_ms").replace(
        "freeze", "stall"
    ).replace("length_ms", "duration_ms").replace("reset", "rst")
    load = read_text(older, "x.yaml", formats=TWO)
    assert load.issues == ()
    assert (load.scenarios[0].link.tokens.profile, load.scenarios[0].format) == ("openai", 1)  # type: ignore[union-attr]
    assert _messages(load.warnings)[0][:2] == (7, "link.tokens.profile")
    unnamed = read_text(older.removeprefix("format: 1\n"), "x.yaml", formats=TWO)
    assert (unnamed.scenarios[0].link.tokens.profile, unnamed.warnings) == ("generic", ())  # type: ignore[union-attr]
    named_two = read_text(older.replace("format: 1", "format: 2"), "x.yaml", formats=TWO)
    assert (named_two.scenarios[0].link.tokens.profile, named_two.warnings) == ("generic", ())  # type: ignore[union-attr]
    upgraded = upgrade_text(older, "x.yaml", formats=TWO)
    assert upgraded.text == older.replace("format: 1", "format: 2").replace("generic", "openai")
    assert [c.text for c in upgraded.changes] == [
        "format 1 -> format 2",
        "profile: generic: wrote `profile: openai` instead",
    ]


def test_a_file_whose_folder_names_the_older_version_gets_its_own_format() -> None:
    text = (
        "- name: a\n  description: d\n"
        "  link: {framing: sse, payload: tokens, tokens: {profile: generic}}\n"
        "  expect: {complete: true}\n"
    )
    assert read_text(text, "x.yaml", formats=TWO, default_format=1).scenarios[0].format == 1
    upgraded = upgrade_text(text, "x.yaml", formats=TWO, default_format=1)
    assert upgraded.text == "- format: 2\n  " + text[2:].replace("generic", "openai")
    assert read_text(upgraded.text, "x.yaml", formats=TWO, default_format=1).warnings == ()


def test_the_format_a_file_is_read_in_and_its_mistakes() -> None:
    one = (
        "name: a\ndescription: d\nlink: {framing: sse, payload: tokens}\nexpect: {complete: true}\n"
    )

    def problems(head: str, rules: FormatRules = FORMAT_RULES) -> list[tuple[int, str, str]]:
        return _messages(read_text(head + one, "x.yaml", formats=rules).issues)

    assert problems("format: 1\n") == []
    assert read_text("format: 1\n" + one, "x.yaml").scenarios[0].format == 1
    assert read_text(one, "x.yaml").scenarios[0].format is None
    newer = "format 2 is newer than this tearline (this tearline reads format 1): upgrade tearline"
    assert problems("format: 2\n") == [(1, "format", newer)]
    assert problems("format: 0\n", TWO) == [
        (1, "format", "format 0 is no longer read (this tearline reads formats 1 to 2)")
    ]
    assert problems("format: '1'\n") == [
        (
            1,
            "format",
            "expected a format version, an integer (this tearline reads format 1) (got string '1')",
        )
    ]
    assert problems("format: true\n")[0][2].endswith("(got boolean true)")
    listed = "- format: 1\n  " + one.replace("\n", "\n  ").rstrip() + "\n"
    second = listed.replace("name: a", "name: b").replace("format: 1", "format: 2")
    assert _messages(read_text(listed + second, "x.yaml", formats=TWO).issues) == [
        (6, "format", "format 2, but this file says format 1 (line 1): one file, one format")
    ]
    assert read_text(listed + listed.replace("name: a", "name: b"), "x.yaml").issues == ()


def test_the_schema_carries_the_version() -> None:
    schema = json_schema()
    assert schema["title"] == f"tearline scenario file, format {CURRENT_FORMAT}"
    assert schema["$defs"]["Scenario"]["properties"]["format"]["maximum"] == CURRENT_FORMAT


def test_every_version_and_deprecation_is_in_the_docs_and_the_changelog() -> None:
    docs = (ROOT / "docs" / "scenario-format.md").read_text(encoding="utf-8")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    table = docs.partition("### Deprecated forms")[2].partition("\n\n| ")[2].partition("\n\n")[0]
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (\S+) \| ([^|]+?) \|", "| " + table, re.MULTILINE)
    assert rows == [
        (d.id, d.since, "every version" if d.up_to is None else f"format {d.up_to} and older")
        for d in FORMAT_RULES.deprecations
    ]
    for deprecation in FORMAT_RULES.deprecations:
        assert f"deprecation `{deprecation.id}`" in changelog
    assert f"This tearline reads and writes version **{CURRENT_FORMAT}**" in docs
    assert f"the current version, **{CURRENT_FORMAT}**" in changelog


def test_the_warning_shown_in_the_docs_is_the_one_validate_prints() -> None:
    docs = (ROOT / "docs" / "scenario-format.md").read_text(encoding="utf-8")
    shown = re.search(r"^q07\.yaml:16: warning: .*$", docs, re.MULTILINE)
    path = ROOT / "tests" / "compat" / "deprecated" / "q07-sse-stall-with-heartbeats.yaml"
    (warning,) = read_text(path.read_bytes(), "q07.yaml").warnings
    assert shown is not None and shown[0] == str(replace(warning, file="q07.yaml"))
