"""``tearline hunt`` for real, small: a broken consumer is caught and the shrunk plan written;
the file replays with ``tearline run`` (the reference passes, the consumer fails the same way);
the reference consumer run as a program is caught by nothing; bad input is one line and exit 2;
a consumer that hangs costs one case's deadline."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import pytest
import trio

from harness.cli.main import main
from harness.hunt.diagnosis import failure_key, is_failure
from harness.hunt.plan import SHORT_DEADLINE_MS, with_command
from harness.link.reference import prepared_link
from harness.running.runner import run_case
from harness.scenario import Case, expand, load_file

ROOT = Path(__file__).resolve().parents[2]
SPLITLINES = f"{sys.executable} -m tests.broken.splitlines"
REFERENCE = (
    f"{sys.executable} -m harness.cli consume --connect {{host}}:{{port}} --framing {{framing}}"
    " --payload {payload} --profile {profile}"
    " --incomplete-message-timeout-ms {incomplete_message_timeout_ms}"
    " --max-reconnects {max_reconnects} --sse-body {sse_body} --json"
)


@pytest.fixture(autouse=True)
def broken_consumers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # python -m tests.broken.<module>


def hunt(*args: str) -> int:
    return main(["hunt", "--framing", "ndjson", "--payload", "messages", "--no-database", *args])


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_broken_consumer_is_caught_and_the_plan_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = tmp_path / "found.yaml"
    status = hunt(
        "--consumer", SPLITLINES, "--seed", "3", "--budget", "30", "--shrink-budget", "25",
        "-o", str(found),
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1, err
    assert "seed 3" in err and "FAILURE" in err and "shrunk in" in err
    (scenario,) = load_file(found)
    assert scenario.source == "tearline hunt seed 3" and scenario.link.consumer.command is None
    assert 1 <= len(scenario.faults) <= 2
    (case,) = expand(scenario, prepared_link)
    reference = trio.run(run_case, case)
    assert reference.outcome == "pass", reference.diagnosis
    link = with_command(scenario.link, tuple(SPLITLINES.split()))
    theirs = dataclasses.replace(case, scenario=dataclasses.replace(scenario, link=link))
    mine = trio.run(run_case, theirs)
    assert is_failure(mine)
    assert failure_key(mine, scenario.expect) in found.read_text()  # the same way


def test_the_reference_consumer_program_is_caught_by_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "none.yaml"
    status = hunt(
        "--consumer", REFERENCE, "--seed", "5", "--budget", "6", "--strict", "-o", str(output)
    )
    err = capsys.readouterr().err
    assert status in (0, 3), err  # 3: plans the reference fails in-process too (not its own)
    assert "6 cases" in err and "0 failures" in err and not output.exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--framing", "nope"], "invalid choice: 'nope'"),
        (["--budget", "0"], "--budget: must be between 1"),
        (["--consumer", "no-such-consumer-program {host}"], "cannot start consumer"),
        (["--consumer", f"{sys.executable} -c print(1)"], "gives no report"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["hunt", "--framing", "ndjson", "--payload", "messages", "--no-database"]
    if "--consumer" not in args:
        base += ["--consumer", SPLITLINES]
    try:
        status = main([*base, *args])
    except SystemExit as exit_:  # argparse
        status = int(exit_.code or 0)
    assert status == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("tearline hunt: ") and said in line


def test_a_consumer_that_hangs_costs_one_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hangs = f"{sys.executable} -c 'import time; time.sleep(60)'"
    started = time.monotonic()
    status = hunt("--consumer", hangs, "--seed", "1", "-o", str(tmp_path / "hang.yaml"))
    elapsed = time.monotonic() - started
    assert status == 1, capsys.readouterr().err
    assert elapsed < SHORT_DEADLINE_MS / 1000 + 5
    (scenario,) = load_file(tmp_path / "hang.yaml")
    assert scenario.faults == ()  # it hangs on the clean link: that is the smallest plan
    assert isinstance(expand(scenario, prepared_link)[0], Case)
