"""The pure core stays pure: importing any of its modules, in a fresh interpreter, loads neither
trio nor the proxy, the runner, the command line or scapy (transitively, not only directly).

The pure modules are listed by folder, so a new module is checked the day it is added; the
I/O shell is the short list of exceptions (``SHELL``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_FOLDERS = (
    "reference_impl",
    "harness/config",
    "harness/faults",
    "harness/scenario",
    "harness/link",
    "harness/judging",
    "harness/reports",
    "harness/record",
    "harness/consumers",
    "harness/control",
    "harness/hunt",
)
PURE_FILES = ("harness/errors.py",)
#: modules in those folders that are the I/O shell (they own sockets, files or the clock)
SHELL = {
    "reference_impl.producer",
    "reference_impl.consumer",
    "harness.reports.writer",
    "harness.reports.pcap",
    "harness.record.recorder",
    "harness.record.replay",
    "harness.record.capture",
    # a consumer function's process, its pool and the clients it drives
    "harness.consumers.clients",
    "harness.consumers.fixtures",
    "harness.consumers.pool",
    "harness.consumers.program",
    "harness.consumers.runner",
    "harness.consumers.worker",
    # the control API's server and the proxies it runs
    "harness.control.api",
    "harness.control.asgi",
    "harness.control.routes",
    "harness.control.runtime",
    # hunt's search loop, which runs cases
    "harness.hunt.engine",
    "harness.hunt.live",
    # pure, but Hypothesis itself imports trio (for its own trio support): not checkable here
    "harness.hunt.strategies",
    # TLS over trio streams, for the producer and consumer
    "reference_impl.tls_stream",
}
#: packages whose modules are all shell: each adapter drives a real client library, which
#: brings its own I/O (httpx loads rich and click when its command line is installed)
SHELL_PACKAGES = ("harness.consumers.adapters.",)
#: what no pure module may load, even indirectly
FORBIDDEN = ("trio", "scapy", "harness.proxy", "harness.running", "harness.cli", "rich")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def pure_modules() -> list[str]:
    files = [p for folder in PURE_FOLDERS for p in (ROOT / folder).rglob("*.py")]
    files += [ROOT / name for name in PURE_FILES]
    modules = {_module(p) for p in files} - SHELL
    return sorted(m for m in modules if not m.startswith(SHELL_PACKAGES))


PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


def loaded_by(module: str) -> set[str]:
    """Every module a fresh interpreter has loaded after importing ``module``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return set(json.loads(done.stdout))


def _forbidden(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))


@pytest.mark.parametrize("module", pure_modules())
def test_a_pure_module_loads_no_io_shell(module: str) -> None:
    assert _forbidden(loaded_by(module)) == []


def test_the_reference_codecs_open_no_socket_module() -> None:
    """The sans-IO codecs and the consumer's core do not even import ``socket``."""
    loaded = loaded_by("reference_impl.session")
    assert {"socket", "trio"} & loaded == set()


def test_the_pure_list_covers_the_core() -> None:
    modules = pure_modules()
    for expected in ("harness.judging.judge", "harness.faults.stage", "harness.reports.html"):
        assert expected in modules
    assert len(modules) >= 50


def test_the_shell_is_not_pure() -> None:
    """The exceptions are real: the proxy side does load trio (else the check could not fail)."""
    assert "trio" in loaded_by("harness.proxy.server")
