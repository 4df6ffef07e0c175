"""``tearline run | validate | list | upgrade`` as a user runs them, on folders with a broken
file and files in a deprecated form: the broken file is reported and left out, the others go
on, and the exit status says so."""

from __future__ import annotations

import codecs
import json
import os
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

GOOD = """\
name: clean
description: A clean stream of five messages.
link: {framing: length-prefixed, payload: messages}
expect: {verdict: MESSAGE_COMPLETE, accepted_messages: 5}
"""
BROKEN = "name: Bad Name\ndescription: d\nlink: {framing: sse, payload: tokens}\nexpect: {}\n"
OLD = """\
name: old
description: A stall with an old-style heartbeat between two messages.
link: {framing: sse, payload: messages, framing_options: {sse_body: close}}
faults:
  - kind: stall   # a comment
    at: {frame: 2}
    duration_ms: 20
    heartbeat_text: ": ping\\n"
    heartbeat_interval_ms: 5
expect: {verdict: MESSAGE_COMPLETE, accepted_messages: 5}
"""
WARNING = (
    "{path}:8: warning: faults[0].heartbeat_text: deprecated (heartbeat-text-alone): "
    "heartbeat_text without heartbeat writes its text as it is; write `heartbeat: "
    "sse-comment` instead (the heartbeat this text is) (`tearline upgrade` rewrites the file)"
)
BROKEN_LINES = [
    "{path}:1: name: must be lowercase letters, digits, '.', '_' or '-', starting with a letter "
    "or digit (got 'Bad Name')",
    "{path}:4: expect: give at least one of verdict, any_of, complete, accepted_messages",
]


def tearline(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    paths = tmp_path / "a-broken.yaml", tmp_path / "b-good.yaml", tmp_path / "c-old.yaml"
    for path, text in zip(paths, (BROKEN, GOOD, OLD), strict=True):
        path.write_text(text, encoding="utf-8")
    return paths


def _lines(template: list[str], path: Path) -> list[str]:
    return [line.format(path=path) for line in template]


def test_validate_reports_the_broken_file_and_checks_the_others(tmp_path: Path) -> None:
    broken, _, old = _folder(tmp_path)
    done = tearline("validate", tmp_path)
    expected = [*_lines(BROKEN_LINES, broken), WARNING.format(path=old)]
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", expected)
    broken.unlink()
    done = tearline("validate", tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "ok: 2 cases\n",
        WARNING.format(path=old) + "\n",
    )


def test_validate_strict_makes_a_deprecated_form_an_error(tmp_path: Path) -> None:
    _, good, old = _folder(tmp_path)
    done = tearline("validate", "--strict", good, old)
    error = WARNING.format(path=old).replace(": warning:", ":")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", error + "\n")


def test_list_lists_the_files_that_load(tmp_path: Path) -> None:
    broken, _, old = _folder(tmp_path)
    done = tearline("list", tmp_path)
    assert done.returncode == 2
    assert [line.split("  ")[0] for line in done.stdout.splitlines()] == [
        "b-good::clean",
        "c-old::old",
    ]
    assert done.stderr.splitlines() == [*_lines(BROKEN_LINES, broken), WARNING.format(path=old)]


def test_run_runs_the_files_that_load_and_names_the_one_left_out(tmp_path: Path) -> None:
    broken, _, _ = _folder(tmp_path)
    done = tearline("run", tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "2 cases in" in done.stdout
    assert "did not pass" not in done.stdout
    errors = done.stderr.splitlines()
    assert errors[:2] == _lines(BROKEN_LINES, broken)
    assert errors[-1] == f"not run: {broken}:1: 2 problem(s), listed before the cases ran"


def test_the_reports_list_the_file_left_out(tmp_path: Path) -> None:
    """results.json, junit.xml and the page carry the broken file as an error, beside the
    cases of the files that ran; a joined run of shards keeps it once."""
    library = tmp_path / "library"
    library.mkdir()
    broken, _, _ = _folder(library)
    done = tearline("run", library, "--report", tmp_path / "out", "--jobs", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text("utf-8"))
    refused = [
        {
            "file": str(broken),
            "line": 1,
            "problems": [
                {"line": 1, "key_path": "name", "message": BROKEN_LINES[0].split(": name: ")[1]},
                {
                    "line": 4,
                    "key_path": "expect",
                    "message": BROKEN_LINES[1].split(": expect: ")[1],
                },
            ],
        }
    ]
    assert (document["refused_files"], document["totals"]["cases"]) == (refused, 2)
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert (junit.get("tests"), junit.get("errors"), junit.get("failures")) == ("3", "1", "0")
    suite = junit.find("testsuite")
    assert suite is not None and suite.get("name") == "scenario files not run"
    error = suite.find("testcase/error")
    assert error is not None and error.get("message") == _lines(BROKEN_LINES, broken)[0]
    assert (error.text or "").splitlines() == _lines(BROKEN_LINES, broken)
    page = (tmp_path / "out" / "index.html").read_text("utf-8")
    assert "Scenario files not run: 1" in page and f"{broken}:1</div>" in page
    shards = [tmp_path / f"shard{k}" for k in (1, 2)]
    for k, folder in enumerate(shards, 1):
        done = tearline("run", library, "--shard", f"{k}/2", "--report", folder, "--jobs", "1")
        assert done.returncode == 2, done.stdout + done.stderr
    done = tearline("report", *shards, "--out", tmp_path / "joined")
    assert (done.returncode, done.stderr) == (2, f"not run: {broken}:1: 2 problem(s)\n")
    joined = json.loads((tmp_path / "joined" / "results.json").read_text("utf-8"))
    assert joined["refused_files"] == refused
    junit = ET.parse(tmp_path / "joined" / "junit.xml").getroot()
    assert (junit.get("tests"), junit.get("errors")) == ("3", "1")


def test_upgrade_check_then_upgrade_in_place(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    old.write_bytes(codecs.BOM_UTF8 + OLD.replace("\n", "\r\n").encode())
    os.chmod(old, 0o640)
    before = old.read_bytes()
    change = (
        f"{old}:8: faults[0].heartbeat_text: heartbeat_text without heartbeat writes its text "
        "as it is: wrote `heartbeat: sse-comment` instead (the heartbeat this text is)"
    )
    done = tearline("upgrade", "--check", tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        f"{change}\nwould upgrade 1 file(s); 0 already current\n",
        "",
    )
    assert old.read_bytes() == before
    done = tearline("upgrade", old)
    assert (done.returncode, done.stdout) == (
        0,
        f"{change}\nupgraded 1 file(s); 0 already current\n",
    )
    after = OLD.replace('heartbeat_text: ": ping\\n"', "heartbeat: sse-comment")
    assert old.read_bytes() == codecs.BOM_UTF8 + after.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["old.yaml"]  # no temporary file left
    done = tearline("upgrade", "--check", old)
    assert (done.returncode, done.stdout) == (0, "would upgrade 0 file(s); 1 already current\n")


def test_upgrade_says_what_it_cannot_do(tmp_path: Path) -> None:
    mistaken = tmp_path / "mistaken.yaml"
    mistaken.write_text(OLD.replace("accepted_messages: 5", "accepted_messages: -1"))
    missing = tmp_path / "missing.yaml"
    done = tearline("upgrade", mistaken, missing)
    assert done.returncode == 2
    assert done.stdout.splitlines()[-1] == "upgraded 1 file(s); 0 already current; 2 with problems"
    assert done.stderr.splitlines() == [
        f"{missing}: no such file or directory",
        f"{mistaken}:10: expect.accepted_messages: must be >= 0 (got -1)",
    ]
    assert "heartbeat: sse-comment" in mistaken.read_text()


def test_a_faults_file_is_upgraded_as_a_faults_file(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    stall = "{kind: stall, at: {offset: 0}, duration_ms: 5, heartbeat_text: hb}"
    faults.write_text(f"faults:\n  - {stall}\n")
    done = tearline("upgrade", faults)
    assert done.returncode == 0, done.stderr
    upgraded = stall.replace("heartbeat_text", "heartbeat: raw, heartbeat_text")
    assert faults.read_text() == f"faults:\n  - {upgraded}\n"
