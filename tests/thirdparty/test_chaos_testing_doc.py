"""docs/chaos-testing.md's walk-through, run as written against its own service.

The doc points its scenario file (``my-service.yaml``, a block of the doc) at
``docs/examples/sse_service.py`` with ``tearline run --upstream``; ``tests/test_doc_examples.py``
runs the same block against the reference producer. Here every case runs against the doc's
service itself (under uvicorn, plain and over TLS with its certificate trusted), so a change to
the service, the doc or tearline that breaks the walk-through fails CI.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from harness.cli.scenario import retarget
from harness.link.reference import prepared_link
from harness.running.execute import run_all
from harness.scenario import Case, expand, load_text
from tests.thirdparty.servers import AsyncioThread, Tls, Uvicorn

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "chaos-testing.md"
#: the service's pause between tokens in the doc is 10 ms; 1 ms keeps the test short
TOKEN_MS = 1.0


def _service_module() -> ModuleType:
    path = ROOT / "docs" / "examples" / "sse_service.py"
    spec = importlib.util.spec_from_file_location("sse_service", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _my_service_cases() -> list[Case]:
    """The doc's ``my-service.yaml`` block (the first scenario block that names the service)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(), re.DOTALL | re.MULTILINE)
    (text,) = [b for b in blocks if b.startswith("# Every position kind works on your service")]
    return [case for s in load_text(text, "my-service.yaml") for case in expand(s, prepared_link)]


@pytest.fixture(scope="module")
def service(asyncio_thread: AsyncioThread, service_tls: Tls) -> Iterator[tuple[int, int]]:
    """The doc's service on a plain and a TLS port."""
    app = _service_module().app(TOKEN_MS)
    plain = Uvicorn(app, asyncio_thread, None)
    secure = Uvicorn(app, asyncio_thread, service_tls.server_context(["http/1.1"]))
    try:
        yield plain.port, secure.port
    finally:
        plain.close()
        secure.close()


@pytest.mark.parametrize("secure", [False, True], ids=["plain", "tls"])
def test_the_walk_through_passes_against_its_own_service(
    service: tuple[int, int], service_tls: Tls, secure: bool
) -> None:
    plain, tls = service
    upstream = f"https://127.0.0.1:{tls}" if secure else f"127.0.0.1:{plain}"
    cases = [retarget(case, None, upstream) for case in _my_service_cases()]
    if secure:
        cases = [_trusting(case, str(service_tls.ca_file)) for case in cases]
    results = run_all(cases)
    assert len(results) == 6
    assert [(r.case_id, r.outcome.value, r.diagnosis) for r in results if not r.passed] == []
    judged = {check.name: check.ok for r in results for check in r.checks}
    assert (judged["I1"], judged["I2"], judged["I3"], judged["I5"]) == (True, True, True, True)


def _trusting(case: Case, ca_file: str) -> Case:
    link = case.scenario.link
    producer = replace(link.producer, upstream_ca=ca_file)
    return replace(case, scenario=replace(case.scenario, link=replace(link, producer=producer)))


def _session(first: str) -> tuple[list[str], list[str]]:
    """The commands (``$ ...``) and the output lines of the doc's console block whose first
    command starts with ``first``."""
    blocks = re.findall(r"^```console\n(.*?)^```", DOC.read_text(), re.DOTALL | re.MULTILINE)
    (text,) = [b for b in blocks if b.startswith(f"$ {first}")]
    lines = text.splitlines()
    return [line[2:] for line in lines if line.startswith("$ ")], [
        line for line in lines if not line.startswith("$ ")
    ]


def _faults_file() -> str:
    blocks = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(), re.DOTALL | re.MULTILINE)
    (text,) = [str(b) for b in blocks if b.startswith("# faults.yaml")]
    return text


def test_the_proxy_session_runs_as_written(service: tuple[int, int], tmp_path: Path) -> None:
    """The proxy in the background, curl once it says it listens: the doc's lines, run by
    bash, print what the doc shows. The proxy listens on a port of its own choosing (the
    script reads it from the listening line), the service is the test's."""
    commands, shown = _session("tearline proxy --listen")
    plain, _ = service
    (tmp_path / "faults.yaml").write_text(_faults_file())
    script = [f'export PATH="{Path(sys.executable).parent}:$PATH"']
    read_port = r"PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' proxy.log)"
    for command in commands:
        line = command.replace("127.0.0.1:18080", f"127.0.0.1:{plain}")
        line = line.replace("--listen 127.0.0.1:18081", "--listen 127.0.0.1:0")
        script.append(line.replace("127.0.0.1:18081", "127.0.0.1:$PORT"))
        if line.startswith("until grep"):  # the proxy's own port, from the line it waited for
            script.append(read_port)
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got = done.stdout.splitlines()
    port = re.search(r"listening on 127\.0\.0\.1:(\d+)", done.stdout)
    assert port is not None
    expected = [
        line.replace("127.0.0.1:18080", f"127.0.0.1:{plain}").replace(
            "127.0.0.1:18081", f"127.0.0.1:{port[1]}"
        )
        for line in shown
    ]

    # the byte offsets count the response head, which the test's uvicorn writes shorter (no
    # Server or Date header) than the doc's ``python docs/examples/sse_service.py``
    def offsets(lines: list[str]) -> list[str]:
        return [re.sub(r"at byte \d+", "at byte N", line) for line in lines]

    assert offsets(got) == offsets(expected)
    assert len(got) == 7
