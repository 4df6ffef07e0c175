"""A fault is its module and one registration: a fault defined here, registered, runs in
``tearline run`` and is drawn by ``tearline hunt``, with no change anywhere else.

``FinInside`` ends the producer's stream with a FIN inside a frame: what ``kill`` does with
``how: fin``, written as a stranger would write a fault of their own (its own stage, effects,
hunt weight and ``hunted``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import pytest

from harness.cli.main import main
from harness.faults import register, unregister
from harness.faults.config import BaseFault
from harness.faults.effects import Effect
from harness.faults.hunted import Draw, Hunt
from harness.faults.items import Close, Item
from harness.faults.position import Position
from harness.faults.stage import PositionedStage, Stage, StageContext
from harness.scenario import load_file

ROOT = Path(__file__).resolve().parents[2]
TAIL_AT_EOF = f"{sys.executable} -m tests.broken.tail_at_eof"


@dataclass(frozen=True, slots=True, kw_only=True)
class FinInside(BaseFault):
    """End the stream with a FIN at ``at`` (the test's own fault).

    - ``at``: where the stream ends.
    """

    kind: ClassVar[str] = "fin_inside"
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.TRUNCATION})
    # first and heaviest: a hunt draws it before any of tearline's own
    hunt: ClassVar[Hunt | None] = Hunt(rank=-1, weight=1000)
    at: Position

    @classmethod
    def hunted(cls, draw: Draw, connection: int) -> Self:
        return cls(at=draw.byte_position(), connection=connection)

    def stage(self, ctx: StageContext) -> Stage:
        return FinInsideStage(self, ctx)


class FinInsideStage(PositionedStage):
    def __init__(self, fault: FinInside, ctx: StageContext) -> None:
        super().__init__(fault.at, ctx)
        self.fault = fault

    def fire(self, offset: int, now: float) -> list[Item]:
        self.ctx.recorder.fault(self.fault.kind, offset, "fin", now)
        return [Close("fin")]

    def after(self, item: Item, now: float) -> list[Item]:
        return []


@pytest.fixture
def registered() -> Iterator[None]:
    register(FinInside)
    try:
        yield
    finally:
        unregister(FinInside.kind)


SCENARIO = """\
- name: fin-inside-frame-two
  description: The test's own fault ends the stream inside frame 2.
  link: {framing: ndjson, payload: envelope, envelope: {records: 4, chunk_records: 2}}
  faults:
    - {kind: fin_inside, at: {frame: 2, fraction: 0.5}}
  expect: {verdict: ERR_ZPARQL_STREAM_TRUNCATED, complete: false, accepted_messages: 0}
- name: fin-inside-a-message
  description: The test's own fault ends an opaque stream inside message 2.
  link: {framing: ndjson, payload: messages, messages: {count: 3}}
  faults:
    - {kind: fin_inside, at: {frame: 2, fraction: 0.5}}
  expect: {verdict: STALE_PARTIAL_BUFFER, complete: false, accepted_messages: 1}
"""


def _cases(report: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((report / "results.json").read_text())["cases"]
    return cases


def test_a_registered_fault_runs_in_tearline_run(
    registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    report = tmp_path / "report"
    assert main(["run", str(path), "--report", str(report)]) == 0, capsys.readouterr().out
    for case in _cases(report):
        fired = [(f["name"], f["detail"]) for f in case["timeline"]["faults"]]
        assert (case["outcome"], fired) == ("pass", [("fin_inside", "fin")])
    # a consumer that hands on the cut message's tail is caught by the judge as for any cut
    theirs = tmp_path / "theirs"
    code = main(["run", str(path), "--consumer", TAIL_AT_EOF, "--report", str(theirs)])
    assert code == 1
    outcomes = {case["id"]: (case["outcome"], case["diagnosis"][:3]) for case in _cases(theirs)}
    assert outcomes["own::fin-inside-a-message"] == ("violation", "I1:")


def test_an_unregistered_kind_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "own.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{path}:5: faults[0].kind: unknown fault kind 'fin_inside'; ")


def test_a_registered_fault_is_drawn_by_tearline_hunt(
    registered: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # python -m tests.broken.<module>
    found = tmp_path / "found.yaml"
    status = main(
        [
            "hunt", "--framing", "ndjson", "--payload", "messages", "--no-database",
            "--consumer", TAIL_AT_EOF, "--seed", "1", "--budget", "20",
            "--shrink-budget", "10", "-o", str(found),
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1, err
    (scenario,) = load_file(found)
    assert [fault.kind for fault in scenario.faults] == ["fin_inside"]
