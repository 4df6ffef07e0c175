"""``tearline clients``, the program shim, and the purity of the core modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.judging.results import Outcome
from harness.running.case import run_case
from harness.running.clients import installed
from tests.consumers.test_runner import case
from tests.test_sans_io import _forbidden, loaded_by

PURE = [
    "harness.consumers.api",
    "harness.consumers.linkinfo",
    "harness.consumers.outcome",
    "harness.consumers.report",
    "harness.consumers.protocol",
    "harness.matrix.sampling",
    "harness.matrix.grid",
    "harness.matrix.page",
    "harness.consumers.catalogue",
]


@pytest.mark.parametrize("module", PURE)
def test_the_core_loads_no_io_shell(module: str) -> None:
    loaded = loaded_by(module)
    assert _forbidden(loaded) == []
    assert not {"openai", "aiohttp", "grpc", "requests", "httpx"} & loaded


def test_the_worker_starts_light() -> None:
    loaded = loaded_by("harness.workers.worker")
    assert not {"trio", "h11", "h2", "wsproto", "yaml"} & loaded


def test_list_names_every_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clients", "--list"]) == 0
    out = capsys.readouterr().out
    assert "openai " in out and "grpcio " in out and "websocket" in out


def test_an_unknown_client_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clients", "--client", "nope"]) == 2
    err = capsys.readouterr().err
    assert err == "tearline clients: no adapter named nope (tearline clients --list)\n"


def test_a_missing_library_is_skipped_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.consumers.catalogue import Adapter  # noqa: PLC0415
    from harness.running import clients  # noqa: PLC0415

    ghost = Adapter("ghost", "m:f", ("ghost-client",), ("no_such_module_x",), ("sse",))
    monkeypatch.setattr(clients, "ADAPTERS", (ghost,))
    ready, skipped = installed()
    assert ready == []
    assert [s.note for s in skipped] == [
        "not installed (no_such_module_x): pip install ghost-client  "
        "(or pip install 'tearline[clients]')"
    ]


def test_a_small_matrix_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "clients",
        "scenarios/framing-websocket",
        "--client",
        "websockets",
        "-k",
        "close-frame-missing",
        "--budget",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "websockets " in out and ": 2 cases in " in out
    data = json.loads((tmp_path / "clients.json").read_text())
    (row,) = data["rows"]
    assert (row["adapter"], sum(row["totals"].values())) == ("websockets", 2)
    assert data["families"] == ["framing-websocket"]
    assert "websockets" in (tmp_path / "clients.html").read_text()


async def test_a_function_as_a_contract_program_gets_the_same_report() -> None:
    as_function = await run_case(case("codec_consumer"))
    program = [
        sys.executable,
        "-m",
        "harness.workers.program",
        "tests.consumers.functions:codec_consumer",
    ]
    text = (
        "name: t\ndescription: d\n"
        f"link: {{framing: sse, payload: messages, consumer: {{command: {json.dumps(program)}}}}}\n"
        "expect: {complete: true}\n"
    )
    from tests.harness.conftest import one_case  # noqa: PLC0415

    as_program = await run_case(one_case(text))
    assert as_function.outcome is as_program.outcome is Outcome.PASS
    assert as_function.report is not None and as_program.report is not None
    assert as_function.report.accepted == as_program.report.accepted
    assert as_function.report.verdict == as_program.report.verdict == "COMPLETE"


def test_the_program_outside_tearline_says_so() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.workers.program", "tests.consumers.functions:pid"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin"},
        cwd=Path.cwd(),
    )
    assert done.returncode == 2 and "not run by tearline" in done.stderr
