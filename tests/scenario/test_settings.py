"""``tearline.yaml``: the format of the files beside it (and below it in a git repository), never
read as a scenario file; a wrong one is reported once and keeps the files it governs from being
read."""

from __future__ import annotations

from pathlib import Path

from harness.scenario import read_file, read_paths
from harness.scenario.formats import FORMAT_RULES
from harness.scenario.settings import SettingsFinder, read_settings
from harness.scenario.versions import FormatRules, FormatVersion

ONE = "name: a\ndescription: d\nlink: {framing: sse, payload: tokens}\nexpect: {complete: true}\n"
TWO = FormatRules((FormatVersion(1, "d", "s"), FormatVersion(2, "d", "s")), ())


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_file_takes_the_format_of_the_tearline_yaml_beside_it(tmp_path: Path) -> None:
    _tree(tmp_path, {"tearline.yaml": "format: 1\n", "a.yaml": ONE, "sub/b.yaml": ONE})
    assert read_file(tmp_path / "a.yaml").scenarios[0].format == 1
    # outside a repository, a folder above is not looked at
    assert read_file(tmp_path / "sub" / "b.yaml").scenarios[0].format is None
    assert [load.file for load in read_paths(tmp_path)] == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "sub" / "b.yaml"),
    ]


def test_in_a_repository_the_nearest_one_up_to_its_top_wins(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "tearline.yaml": "format: 2\n",  # above the repository: never read
            "repo/.git/HEAD": "ref: x\n",
            "repo/tearline.yml": "format: 1\n",
            "repo/lib/deep/c.yaml": ONE,
            "repo/other/tearline.yaml": "# nothing said\n{}\n",
            "repo/other/d.yaml": ONE,
        },
    )
    finder = SettingsFinder(TWO)
    found, _ = finder.of_file(tmp_path / "repo" / "lib" / "deep" / "c.yaml")
    assert found is not None and (found.file, found.format) == (
        str(tmp_path / "repo/tearline.yml"),
        1,
    )
    found, _ = finder.of_file(tmp_path / "repo" / "other" / "d.yaml")
    assert found is not None and found.format is None


def test_a_wrong_settings_file_is_reported_once_and_its_files_are_not_read(tmp_path: Path) -> None:
    _tree(tmp_path, {"tearline.yaml": "format: 9\nfromat: 1\n", "a.yaml": ONE, "b.yaml": ONE})
    loads = read_paths(tmp_path)
    settings = str(tmp_path / "tearline.yaml")
    not_read = f"not read: the settings file {settings} that governs it is wrong (see there)"
    assert [[str(issue) for issue in load.issues] for load in loads] == [
        [f"{tmp_path / 'a.yaml'}: {not_read}"],
        [f"{tmp_path / 'b.yaml'}: {not_read}"],
        [
            f"{settings}:1: format: format 9 is newer than this tearline (this tearline reads "
            "format 1): upgrade tearline",
            f"{settings}:2: fromat: unknown key (expected only 'format')",
        ],
    ]


def test_named_on_the_command_line_it_is_checked_not_run(tmp_path: Path) -> None:
    _tree(tmp_path, {"tearline.yaml": "- format: 1\n"})
    (load,) = read_paths([tmp_path / "tearline.yaml"])
    assert (load.scenarios, [i.message for i in load.issues]) == (
        (),
        ["expected a mapping of settings (got a list)"],
    )
    assert read_settings("format: 1\n", "t.yaml", FORMAT_RULES)[0] is not None
