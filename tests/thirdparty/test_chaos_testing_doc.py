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
