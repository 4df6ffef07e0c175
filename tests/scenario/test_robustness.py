"""Bad input of every kind gets one short issue line at its place, never a traceback or a hang.

Each test pins a bug the fuzzer (``tests/scenario/test_fuzz.py``, ``benchmarks/bench_fuzz.py``)
or issue #8 found; the docstring says what happened before. Lines and key paths are exact,
messages are checked by their key facts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.config.issues import MAX_ISSUES_PER_FILE, Issues, clip_repr
from harness.config.nodes import MAX_DEPTH, MAX_MERGE_DEPTH, parse
from harness.errors import FieldError
from harness.scenario import MAX_CASES, Scenario, ScenarioError, SchemaIssue, expand, load_paths
from harness.scenario.loader import MAX_FILE_BYTES
from tests.scenario.toys import MINIMAL, REGISTRY, FixedShape, issues, load

ROOT = Path(__file__).resolve().parents[2]
LINK = "link: {framing: ndjson, payload: messages}"


def _file_issues(*paths: Path) -> list[tuple[str, int, str, str]]:
    """``(file, line, key path, message)`` of every issue of loading ``paths``, the load run in
    a thread with a time limit: a file that blocks the reader fails the test, not the run."""
    caught: list[BaseException] = []

    def work() -> None:
        try:
            load_paths(paths, faults=REGISTRY)
        except BaseException as err:  # handed to the test thread
            caught.append(err)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "loading blocked"
    [err] = caught
    assert isinstance(err, ScenarioError), err
    return [(i.file, i.line, i.key_path, i.message) for i in err.issues]


def _one(text: str) -> tuple[int, str, str]:
    [found] = issues(text)
    return found


# ---- files that are not scenario files: refused before they are opened for reading


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    """Before: `validate x.yaml` on a FIFO blocked for ever in open()."""
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)
    assert _file_issues(fifo) == [
        (str(fifo), 0, "", "a named pipe (FIFO), not a scenario file: not read")
    ]


def test_special_files_in_a_folder_are_reported_not_skipped(tmp_path: Path) -> None:
    """A FIFO or a dangling link named like a scenario is a mistake to hear about."""
    os.mkfifo(tmp_path / "a.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "gone.yaml")
    (tmp_path / "c.yaml").write_text(MINIMAL)
    assert [(file, line) for file, line, _, _ in _file_issues(tmp_path)] == [
        (str(tmp_path / "a.yaml"), 0),
        (str(tmp_path / "b.yaml"), 0),
    ]


def test_a_device_is_refused() -> None:
    assert _file_issues(Path("/dev/zero")) == [
        ("/dev/zero", 0, "", "a character device, not a scenario file: not read")
    ]


def test_a_dangling_link_says_where_it_points(tmp_path: Path) -> None:
    """Before: "no such file or directory", as if the link were not there."""
    link = tmp_path / "x.yaml"
    link.symlink_to("nowhere.yaml")
    assert _file_issues(link) == [
        (str(link), 0, "", "a dangling symbolic link (to 'nowhere.yaml')")
    ]


def test_a_link_loop_is_refused(tmp_path: Path) -> None:
    """Before: "no such file or directory" (and skipped silently in a folder)."""
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    [(file, line, path, message)] = _file_issues(tmp_path / "a.yaml")
    assert (file, line, path) == (str(tmp_path / "a.yaml"), 0, "")
    assert message.startswith("cannot read: ")


def test_a_folder_linked_into_itself_is_walked_once(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(MINIMAL)
    (tmp_path / "loop").symlink_to(tmp_path)
    assert [s.name for s in load_paths([tmp_path], faults=REGISTRY)] == ["minimal"]


def test_a_big_file_is_refused_with_its_size_before_it_is_read(tmp_path: Path) -> None:
    """Before: a 20 MB one-line file took 13 s to parse, then to echo back."""
    path = tmp_path / "big.yaml"
    size = MAX_FILE_BYTES + 1
    path.write_bytes(b"a" * size)
    assert _file_issues(path) == [
        (str(path), 0, "", f"{size} bytes: too big for a scenario file (at most 1048576); not read")
    ]


def test_an_empty_file_has_no_line_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_bytes(b"")
    assert _file_issues(path) == [
        (str(path), 0, "", "empty file (0 bytes): expected a scenario or a list of scenarios")
    ]


def test_a_file_of_comments_points_at_line_1(tmp_path: Path) -> None:
    path = tmp_path / "comments.yaml"
    path.write_text("# nothing yet\n\n")
    assert [(line, key) for _, line, key, _ in _file_issues(path)] == [(1, "")]


@contextmanager
def _unprivileged() -> Iterator[None]:
    """Root reads any file (CI runs as root): drop the effective uid to nobody's for the read;
    the saved uid (still root) takes it back."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)


def test_an_unreadable_file_says_why() -> None:
    # pytest's tmp_path lies below a root-only folder: a folder anybody may enter instead
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        path = Path(folder) / "secret.yaml"
        path.write_text(MINIMAL)
        path.chmod(0)
        with _unprivileged():
            found = _file_issues(path)
    assert found == [(str(path), 0, "", "cannot read: Permission denied")]


def test_a_nul_byte_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "nul.yaml"
    path.write_bytes(MINIMAL.encode() + b"source: a\x00b\n")
    [(_, line, key, message)] = _file_issues(path)
    assert (line, key) == (5, "")
    assert message.startswith("YAML syntax error")


# ---- YAML structure


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
def test_deep_nesting_is_refused_at_its_line_by_either_parser(fast: bool) -> None:
    """Before: RecursionError in PyYAML's composer, reported at line 0 ("nested too deeply")."""
    text = "a: 1\nb: 2\nc: " + "{d: " * (MAX_DEPTH + 10) + "1" + "}" * (MAX_DEPTH + 10) + "\n"
    found = Issues("x.yaml")
    assert parse(text, found, fast=fast) is None
    assert [(i.line, i.message) for i in found.items] == [
        (3, f"YAML syntax error: nested more than {MAX_DEPTH} deep")
    ]


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
def test_an_alias_inside_its_own_anchor_is_refused(fast: bool) -> None:
    """PyYAML composes `&a [*a]` into a list that contains itself."""
    found = Issues("x.yaml")
    assert parse("a: 1\nb: &x [1, *x]\n", found, fast=fast) is None
    assert [(i.line, i.message) for i in found.items] == [
        (2, "YAML syntax error: alias *x inside its own anchor")
    ]


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize("odd", ["\u2028", "\u2029", "\x85", "\r"], ids=["LS", "PS", "NEL", "CR"])
def test_lines_are_counted_as_editors_count_them(fast: bool, odd: str) -> None:
    """YAML also ends a line at a lone CR, NEL, LS and PS; grep and editors do not. Before,
    a mistake after one was reported a line too far (past the end of a one-line file)."""
    found = Issues("x.yaml")
    assert parse(MINIMAL + f'source: "a{odd}b"\nseed: [\n', found, fast=fast) is None
    assert [i.line for i in found.items] == [7]  # the end of the file, after line 6


def test_a_list_of_faults_shared_by_alias_loads_in_every_scenario() -> None:
    """Pairs are computed once per node; a caller that takes the `kind` key out of them must
    not take it out for the next scenario (a bug of the first version of that cache)."""
    text = (
        "- name: a\n  description: d\n  link: {framing: sse, payload: messages}\n"
        "  faults: &f [{kind: kill, at: {offset: 1}}]\n  expect: {complete: false}\n"
        "- name: b\n  description: d\n  link: {framing: sse, payload: messages}\n"
        "  faults: *f\n  expect: {complete: false}\n"
    )
    first, second = load(text)
    assert first.faults == second.faults != ()


def test_merges_of_merges_are_refused_before_they_blow_up() -> None:
    """Before: each level merged the one below twice, re-walked every time: 2**40 steps."""
    text = "- &a0 {x: 1}\n" + "".join(
        f"- &a{i} {{<<: [*a{i - 1}, *a{i - 1}]}}\n" for i in range(1, 40)
    )
    started = time.monotonic()
    [(line, key, message)] = issues(text)
    assert time.monotonic() - started < 5
    assert (line, key) == (18, "")  # a17, the level that takes the count past MAX_NODES
    assert message == "YAML syntax error: aliases expand this document past 1000000 nodes"


def test_a_long_chain_of_merges_is_cut_at_its_depth() -> None:
    """Before: a chain of 3000 merges was a RecursionError after 10 s."""
    depth = MAX_MERGE_DEPTH + 5
    chain = "".join(f"  - &m{i} {{<<: *m{i - 1}, k{i}: 1}}\n" for i in range(1, depth))
    text = f"x:\n  - &m0 {{k0: 1}}\n{chain}" + MINIMAL.replace(
        LINK, f"link: {{<<: *m{depth - 1}, framing: ndjson, payload: messages}}"
    )
    # link merges m36, which merges m35, ...: m5 (line 7) is the first left unmerged
    deepest = [(line, key) for line, key, message in issues(text) if "nested" in message]
    assert deepest == [(7, "link")]


def test_a_shared_merge_source_is_read_once() -> None:
    """Many scenarios merging one mapping: linear, and its mistakes reported once."""
    item = "- {<<: *base, name: s%d}\n"
    text = (
        "- &base {name: s0, description: d, link: {framing: nope, payload: messages}, "
        "expect: {complete: true}}\n" + "".join(item % i for i in range(1, 300))
    )
    assert [(line, key) for line, key, _ in issues(text)] == [(1, "link.framing")]


# ---- numbers


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("deadline_ms: 1e3", {"deadline_ms": 1000.0}),
        ("deadline_ms: 2.5E+2", {"deadline_ms": 250.0}),
        ("deadline_ms: 1e-1", {"deadline_ms": 0.1}),
        ("seed: 1e6", {"seed": 1000000}),
        ("seed: 1.5e3", {"seed": 1500}),
        ("seed: 12_000", {"seed": 12000}),
    ],
)
def test_numbers_with_an_exponent(line: str, expected: dict[str, object]) -> None:
    """Before: `1e9` was the string '1e9' (YAML 1.1 wants a dot and a signed exponent)."""
    [scenario] = load(MINIMAL + line + "\n")
    got = {key: getattr(scenario, key) for key in expected}
    assert got == expected
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize(
    ("line", "key", "message"),
    [
        ("seed: 2.5e0", "seed", "expected an integer (got number 2.5)"),
        (
            "seed: 1e30",
            "seed",
            "must be <= 18446744073709551615 (got 1000000000000000000000000000000)",
        ),
        (
            "deadline_ms: 1e400",
            "deadline_ms",
            "'1e400' is beyond every bound (the largest is 2^64)",
        ),
        (
            "deadline_ms: 1.0e+400",
            "deadline_ms",
            "'1.0e+400' is beyond every bound (the largest is 2^64)",
        ),
        ("deadline_ms: .nan", "deadline_ms", "must be a finite number (got nan)"),
        ("deadline_ms: -.inf", "deadline_ms", "must be a finite number (got -inf)"),
        ("source: 1e9", "source", "expected a string (got integer 1000000000)"),
        ("seed: 0x_", "seed", "not a number: '0x_'"),
        ("seed: 0b_", "seed", "not a number: '0b_'"),
        ("seed: " + "9" * 5000, "seed", "a number of 5000 characters is beyond every bound"),
        ("seed: 0x" + "f" * 200, "seed", "a number of 202 characters is beyond every bound"),
    ],
)
def test_numbers_no_key_can_take(line: str, key: str, message: str) -> None:
    """Before: `0x_` and integers over 4300 digits were ValueError tracebacks (int() and
    str() of a huge int), `1e400` the string '1e400'."""
    assert _one(MINIMAL + line + "\n") == (5, key, message)


def test_a_huge_integer_is_described_briefly_where_a_mapping_is_expected() -> None:
    assert _one(MINIMAL.replace(LINK, "link: " + "7" * 500)) == (
        3,
        "link",
        "expected a mapping (got the number '" + "7" * 40 + "…' (500 chars))",
    )


# ---- long and strange values are cut and escaped


def test_a_long_value_is_cut_with_its_length() -> None:
    """Before: a 1 MB value was echoed whole (1,000,134 bytes of output)."""
    line, key, message = _one(MINIMAL.replace("ndjson", "x" * 1_000_000))
    assert (line, key) == (3, "link.framing")
    assert message.endswith("(got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…' (1000000 chars))")
    assert len(message) < 200


def test_a_long_value_in_a_message_we_do_not_write_is_cut_too() -> None:
    """The name's pattern message (a constraint's) shows the value with repr: cut on the way."""
    line, key, message = _one(MINIMAL.replace("name: minimal", "name: " + "A" * 100_000))
    assert (line, key) == (1, "name")
    assert "…' (100000 chars)" in message
    assert len(message) < 200


def test_a_long_key_is_cut_in_the_key_path() -> None:
    key = "k" * 1000
    [(line, path, _)] = issues(MINIMAL + f"{key}: 1\n")
    assert line == 5
    assert path == "k" * 40 + "…(1000 chars)"


def test_control_characters_are_escaped_so_an_issue_stays_one_line() -> None:
    [(line, path, message)] = issues(MINIMAL + '"a\\nb\\e[31m": 1\n')
    assert (line, path) == (5, "a\\nb\\x1b[31m")
    assert "\n" not in message


def test_a_file_lists_at_most_its_cap_of_issues_then_counts_the_rest() -> None:
    text = "".join(f"- {i}\n" for i in range(MAX_ISSUES_PER_FILE + 50))
    found = issues(text)
    assert len(found) == MAX_ISSUES_PER_FILE + 1
    assert found[-1] == (
        MAX_ISSUES_PER_FILE + 1,
        "",
        f"50 more issue(s) not listed (at most {MAX_ISSUES_PER_FILE} a file)",
    )


def test_an_issue_built_anywhere_is_made_one_short_line() -> None:
    issue = SchemaIssue("a\nb.yaml", 3, "k" * 500, "bad: " + "v" * 10_000 + "\r\n")
    # the escaped line end is part of the long run of v's that is cut
    assert str(issue) == "a\\nb.yaml:3: " + "k" * 40 + "…(500 chars): bad: " + "v" * 40 + (
        "…(10004 chars)"
    )


# ---- sweeps: counted, never made, before the limit is checked

SWEPT = MINIMAL + "faults: [{kind: kill, at: {offset: 0}}]\nsweep:\n"  # axes from line 7


def test_a_range_longer_than_2_63_is_counted_not_made() -> None:
    """Before: OverflowError from len(range(...)) in sweep.py."""
    assert _one(SWEPT + "  seed: {from: 0, to: 18446744073709551615}\n") == (
        6,
        "sweep",
        f"makes 18446744073709551615 cases; at most {MAX_CASES} are allowed",
    )


def test_a_range_end_written_with_an_exponent_is_checked_as_a_number() -> None:
    assert _one(SWEPT + "  seed: {from: 0, to: 1e30}\n") == (
        7,
        "sweep.seed.to",
        "must be <= 18446744073709551615 (got 1000000000000000000000000000000)",
    )


def test_too_many_listed_values_are_counted_before_any_is_checked() -> None:
    """Each listed value is validated by rebuilding the scenario: 160,000 of them used to be
    checked one by one (a bad one among them shows they no longer are)."""
    values = ", ".join(str(i) for i in range(400))
    text = SWEPT + f"  seed: [{values}, -1]\n  faults[0].at.offset: [{values}]\n"
    assert _one(text) == (
        6,
        "sweep",
        f"the listed values alone make 160400 cases; at most {MAX_CASES} are allowed",
    )


def test_a_huge_end_is_refused_before_any_case_is_made() -> None:
    """Before: `to: end` on a long stream made every value (a list of 10**9) before counting."""
    [scenario] = load(SWEPT + "  faults[0].at.offset: {from: 0, to: end}\n")
    with pytest.raises(ScenarioError) as caught:
        expand(scenario, lambda _: FixedShape(10**12))
    [issue] = caught.value.issues
    assert (issue.line, issue.key_path) == (7, "sweep")
    assert issue.message == f"makes 1000000000000 cases; at most {MAX_CASES} are allowed"


def test_combinations_stop_being_measured_once_there_are_too_many() -> None:
    """The first combination already has too many cases: the other 999 are not measured."""
    seeds = ", ".join(str(i) for i in range(1000))
    [scenario] = load(SWEPT + f"  seed: [{seeds}]\n  faults[0].at.offset: {{from: 0, to: end}}\n")
    measured: list[int] = []

    def shape_of(s: Scenario) -> FixedShape:
        measured.append(1)
        return FixedShape(MAX_CASES + 1)

    with pytest.raises(ScenarioError) as caught:
        expand(scenario, shape_of)
    assert measured == [1]
    assert caught.value.issues[0].message == (
        f"makes at least {MAX_CASES + 1} cases; at most {MAX_CASES} are allowed"
    )


def test_a_stream_that_cannot_be_measured_is_reported_at_its_axis() -> None:
    def shape_of(s: Scenario) -> FixedShape:
        raise FieldError("the reference link cannot make this stream (too big)")

    [scenario] = load(SWEPT + "  seed: [1]\n  faults[0].at.offset: {from: 0, to: end}\n")
    with pytest.raises(ScenarioError) as caught:
        expand(scenario, shape_of)
    assert [(i.line, i.key_path, i.message) for i in caught.value.issues] == [
        (
            8,
            "sweep",
            "values seed=1: `end` of faults[0].at.offset: the reference link cannot make "
            "this stream (too big)",
        )
    ]


def test_a_combination_problem_per_case_is_capped() -> None:
    """Every case breaking a rule between keys used to be one line each (here 300)."""
    text = MINIMAL.replace(LINK, "link: {framing: ndjson, payload: tokens}") + (
        "sweep:\n  link.payload: [messages]\n  link.tokens.count: {from: 0, to: 300}\n"
    )
    [scenario] = load(text)
    with pytest.raises(ScenarioError) as caught:
        expand(scenario, lambda _: FixedShape(0))
    found = caught.value.issues
    assert len(found) == MAX_ISSUES_PER_FILE + 1
    assert {(i.line, i.key_path) for i in found} == {(6, "sweep"), (6, "")}
    assert (
        found[-1].message == f"200 more issue(s) not listed (at most {MAX_ISSUES_PER_FILE} a file)"
    )


# ---- the command: exit 2, one line per problem, at once


def _tearline(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_validate_refuses_special_and_broken_files_with_exit_2(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "dangling.yaml").symlink_to("gone.yaml")
    (tmp_path / "empty.yaml").write_bytes(b"")
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "huge.yaml").write_text(MINIMAL + "seed: " + "9" * 5000 + "\n")
    (tmp_path / "sweep.yaml").write_text(SWEPT + "  seed: {from: 0, to: 18446744073709551615}\n")
    result = _tearline("validate", str(tmp_path), "/dev/null", str(tmp_path / "missing.yaml"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert [line.split(": ", 1)[0] for line in result.stderr.splitlines()] == [
        f"{tmp_path}/missing.yaml",
        f"{tmp_path}/dangling.yaml",
        f"{tmp_path}/deep.yaml:1",
        f"{tmp_path}/empty.yaml",
        f"{tmp_path}/fifo.yaml",
        f"{tmp_path}/huge.yaml:5",
        f"{tmp_path}/sweep.yaml:6",
        "/dev/null",
    ]


def test_a_value_is_cut_as_shown_not_as_written() -> None:
    """Hypothesis's fuzz profile: 15 characters that repr escapes showed as 52 (a character
    can show as 10), and 40 of them as 402: a value is cut to 40 characters as shown."""
    assert clip_repr("0000000000\x1f\x08\U0001005e\U00018d09\U0001f0c0") == (
        "'0000000000\\x1f\\x08\\U0001005e\\U00018d09…' (15 chars)"
    )
    assert clip_repr("\U0001f0c0" * 40) == "'" + "\\U0001f0c0" * 4 + "…' (40 chars)"
    assert clip_repr("x" * 40) == "'" + "x" * 40 + "'"
    line, key, message = _one(MINIMAL + 'faults: [{kind: "' + "\\U0001F0C0" * 40 + '"}]\n')
    assert (line, key) == (5, "faults[0].kind")
    assert message.startswith(
        "unknown fault kind '" + "\\U0001f0c0" * 4 + "…' (40 chars); expected"
    )
