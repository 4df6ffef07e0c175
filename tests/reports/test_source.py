"""Scenario sources cut from their files."""

from __future__ import annotations

from pathlib import Path

from harness.reports.source import SourceReader
from tests.reports.conftest import MIXED

LIST = """\
# comment
- name: a
  description: first
  expect: {complete: true}

- name: b
  description: second
"""


def test_each_scenario_of_a_list(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(LIST)
    reader = SourceReader()
    assert reader.source(str(path), 2) == (
        "- name: a\n  description: first\n  expect: {complete: true}"
    )
    assert reader.source(str(path), 6) == "- name: b\n  description: second"
    assert reader.source(str(path), 3) == ""  # no scenario starts there


def test_a_file_holding_one_scenario(tmp_path: Path) -> None:
    path = tmp_path / "one.yaml"
    path.write_text("name: x\ndescription: y\n")
    assert SourceReader().source(str(path), 1) == "name: x\ndescription: y"


def test_missing_or_broken_files_have_no_source(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("- [unclosed\n")
    reader = SourceReader()
    assert reader.source(str(tmp_path / "gone.yaml"), 1) == ""
    assert reader.source(str(broken), 1) == ""


def test_the_test_data(tmp_path: Path) -> None:
    assert SourceReader().source(str(MIXED), 13).splitlines()[0] == "- name: wrong-expectation"
