"""``tearline upgrade PATH... [--check]``: scenario files (and ``--faults`` files) rewritten in
the current format, in place, with everything else in them kept as it was."""

from __future__ import annotations

import argparse
import codecs
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.config.issues import SchemaIssue, render_path

EXIT_CHANGES = 1
EXIT_BAD_INPUT = 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "upgrade",
        help="rewrite scenario files in the current format, in place (comments, anchors and "
        "layout kept), and say what changed",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="scenario files or folders, or --faults files"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a file would change (for CI)",
    )


@dataclass
class _Tally:
    changed: int = 0
    current: int = 0
    failed: int = 0


def upgrade(args: argparse.Namespace) -> int:
    from harness.scenario.files import find_files  # noqa: PLC0415 - not for `tearline --help`
    from harness.scenario.formats import FORMAT_RULES  # noqa: PLC0415
    from harness.scenario.settings import SettingsFinder  # noqa: PLC0415
    from harness.scenario.sources import SETTINGS_NAMES  # noqa: PLC0415

    files, missing = find_files(args.paths)
    tally = _Tally(failed=len(missing))
    for load in missing:
        _print_issues(load.issues)
    finder = SettingsFinder(FORMAT_RULES)
    for file in files:
        if file.name not in SETTINGS_NAMES:
            _one(file, finder, args.check, tally)
    verb = "would upgrade" if args.check else "upgraded"
    print(
        f"{verb} {tally.changed} file(s); {tally.current} already current"
        + (f"; {tally.failed} with problems" if tally.failed else "")
    )
    if tally.failed:
        return EXIT_BAD_INPUT
    return EXIT_CHANGES if args.check and tally.changed else 0


def _one(file: Path, finder: object, check: bool, tally: _Tally) -> None:
    from harness.scenario.settings import SettingsFinder  # noqa: PLC0415
    from harness.scenario.sources import source  # noqa: PLC0415
    from harness.scenario.upgrade import upgrade_text  # noqa: PLC0415

    assert isinstance(finder, SettingsFinder)
    settings, problems = finder.of_file(file)
    data, unread = source(file)
    if problems or data is None:
        _print_issues(problems or unread)
        tally.failed += 1
        return
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    text = data[len(bom) :].decode("utf-8")  # (source checked it is UTF-8)
    default = settings.format if settings is not None else None
    result = upgrade_text(text, str(file), default_format=default)
    for change in result.changes:
        where = f"{file}:{change.line}: {render_path(change.path)}".rstrip(": ")
        print(f"{where}: {change.text}")
    if result.problems:
        _print_issues(result.problems)
        tally.failed += 1
        return
    if not result.changed:
        tally.current += 1
        return
    tally.changed += 1
    if check:
        return
    _write_in_place(file, bom + result.text.encode("utf-8"))
    mistakes = _mistakes(file, result.text, finder)
    if mistakes:  # mistakes the upgrade does not fix: said, so the run fails
        _print_issues(mistakes)
        tally.failed += 1


def _mistakes(file: Path, text: str, finder: object) -> list[SchemaIssue]:
    """What is still wrong with the upgraded file, read as the kind of file it is."""
    from harness.config.issues import ScenarioError  # noqa: PLC0415
    from harness.scenario.loader import load_faults_file, read_file  # noqa: PLC0415
    from harness.scenario.settings import SettingsFinder  # noqa: PLC0415
    from harness.scenario.upgrade import is_faults_file  # noqa: PLC0415

    assert isinstance(finder, SettingsFinder)
    if not is_faults_file(text):
        return list(read_file(file, settings=finder).issues)
    try:
        load_faults_file(file)
    except ScenarioError as err:
        return err.issues
    return []


def _print_issues(issues: tuple[SchemaIssue, ...] | list[SchemaIssue]) -> None:
    for issue in issues:
        print(issue, file=sys.stderr)


def _write_in_place(file: Path, data: bytes) -> None:
    """Replace the file's bytes at once (a temporary file beside it, renamed over it), keeping
    its permissions; through a symbolic link, the file it points to."""
    target = Path(os.path.realpath(file))
    mode = target.stat().st_mode
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
