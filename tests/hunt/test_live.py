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
from harness.faults import Corrupt, Split
from harness.faults.position import Position
from harness.hunt.diagnosis import Judged, Standing, failure_key, is_failure
from harness.hunt.plan import (
    ANYTHING,
    SHORT_DEADLINE_MS,
    Hunted,
    Plan,
    scenario_of,
    with_consumer,
)
from harness.judging.results import Outcome
from harness.link.reference import prepared_link
from harness.running.case import run_case
from harness.scenario import Case, FramingConfig, Link, MessagesConfig, expand, load_file
from harness.search.trials import LiveCheck, run_scenario
from reference_impl.framing import FramingName
from reference_impl.payload import PayloadName
from tests.hunt import fakes

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
    capsys.readouterr()
    # the written file replays with tearline run: the reference passes, the consumer fails
    assert main(["run", str(found)]) == 0, capsys.readouterr().out
    assert main(["run", str(found), "--consumer", SPLITLINES]) == 1
    (case,) = expand(scenario, prepared_link)
    link = with_consumer(scenario.link, Hunted(command=tuple(SPLITLINES.split())))
    theirs = dataclasses.replace(case, scenario=dataclasses.replace(scenario, link=link))
    mine = trio.run(run_case, theirs)
    assert is_failure(mine)
    assert f"\n# {failure_key(mine, scenario.expect)}: case " in found.read_text()  # the same way


def test_a_broken_consumer_function_is_hunted_like_a_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    function = "tests.consumers.functions:tail_at_eof"
    found = tmp_path / "found.yaml"
    status = hunt(
        "--consumer-function", function, "--seed", "3", "--budget", "30",
        "--shrink-budget", "25", "-o", str(found),
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1, err
    assert f"tearline hunt: {function} over ndjson/messages, seed 3" in err
    assert f"--consumer-function {function}" in found.read_text()
    capsys.readouterr()
    assert main(["run", str(found)]) == 0, capsys.readouterr().out
    assert main(["run", str(found), "--consumer-function", function]) == 1


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
        (["--consumer-function", "no_such_module_x:f"], "no module named 'no_such_module_x'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["hunt", "--framing", "ndjson", "--payload", "messages", "--no-database"]
    if "--consumer" not in args and "--consumer-function" not in args:
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
    connect = "import socket, sys, time; socket.create_connection(('{host}', {port}))"
    hangs = f'{sys.executable} -c "{connect}; time.sleep(60)"'
    started = time.monotonic()
    status = hunt("--consumer", hangs, "--seed", "1", "-o", str(tmp_path / "hang.yaml"))
    elapsed = time.monotonic() - started
    assert status == 1, capsys.readouterr().err
    assert elapsed < SHORT_DEADLINE_MS / 1000 + 5
    (scenario,) = load_file(tmp_path / "hang.yaml")
    assert scenario.faults == ()  # it hangs on the clean link: that is the smallest plan
    assert isinstance(expand(scenario, prepared_link)[0], Case)


def test_a_consumer_that_starts_later_than_the_deadline_is_tested_all_the_same() -> None:
    """Regression: a consumer program slower to start than the case deadline (a loaded
    machine) was killed before it saw the plan's fault. Its deadline now counts from its first
    connection: it is tested, and passes like the reference it is."""
    late = ("sh", "-c", f"sleep 3; exec {REFERENCE}")  # the slow start under test
    check = LiveCheck(Hunted(command=late), seed=1)
    link = Link(framing=FramingName.NDJSON, payload=PayloadName.MESSAGES)
    plan = Plan(link, (Split(at=Position(frame=1)),), deadline_ms=1500.0)
    judged = check.check(plan)
    assert judged.consumer is not None and judged.consumer.outcome == "pass"
    assert judged.standing is Standing.PASS


def test_why_undetectable_rewrites_are_not_drawn() -> None:
    """The premise of ``harness.hunt.visible``: on such a plan the reference consumer itself
    breaks I1 (it hands on the fused event, as any consumer would)."""
    link = Link(
        framing=FramingName.SSE,
        payload=PayloadName.MESSAGES,
        messages=MessagesConfig(count=4, size_bytes=71),
        framing_options=FramingConfig(sse_body="close"),
    )
    fused = Corrupt(at=Position(frame=2, frame_offset=84), count_bytes=3, mask=1)
    reference = trio.run(run_scenario, scenario_of(Plan(link, (fused,)), ANYTHING, seed=1))
    assert reference.outcome == "violation" and reference.diagnosis.startswith("I1: ")


def test_plans_only_the_reference_fails_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sanity gate, through the command: a plan the reference consumer fails is reported
    as a harness or reference problem, never as the consumer's, and the exit status is 3."""
    real = LiveCheck.check

    def reference_fails(self: LiveCheck, plan: Plan) -> Judged:
        if not plan.faults:  # the clean link (the preflight) runs for real
            return real(self, plan)
        bad = fakes.result(Outcome.VIOLATION, diagnosis="I1: a fused message")
        return Judged(plan, Standing.REFERENCE, bad, key="violation: I1")

    monkeypatch.setattr(LiveCheck, "check", reference_fails)
    assert hunt("--consumer", SPLITLINES, "--seed", "1", "--budget", "5") == 3
    err = capsys.readouterr().err
    assert err.count("the REFERENCE consumer fails this plan") == 1  # once per diagnosis
    assert "0 failures" in err and "reference problem violation: I1" in err
