"""The pure core stays pure: importing any module of a pure package (the pure rows of the layer
table in ``docs/architecture.md``, read by ``tests/test_layers.py``), in a fresh interpreter,
loads neither trio nor scapy nor rich nor any shell package (transitively, not only directly).

The pure modules are listed by package, so a new module is checked the day it is added; there
are no exceptions: a module that needs I/O lives in a shell package."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.test_layers import LAYERS, ROOT, modules, package_of

PURE_PACKAGES = {package for layer in LAYERS if layer.pure for package in layer.packages}
SHELL_PACKAGES = {package for layer in LAYERS if not layer.pure for package in layer.packages}
#: what no pure module may load, even indirectly
FORBIDDEN = ("trio", "scapy", "rich", *sorted(SHELL_PACKAGES))


def pure_modules() -> list[str]:
    return sorted(name for name, path in modules().items() if package_of(path) in PURE_PACKAGES)


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
    loaded = loaded_by("reference_impl.link.session")
    assert {"socket", "trio"} & loaded == set()


def test_the_pure_list_covers_the_core() -> None:
    pure = pure_modules()
    for expected in ("harness.judging.judge", "harness.faults.stage", "harness.reports.html"):
        assert expected in pure
    assert len(pure) >= 50


def test_the_shell_is_not_pure() -> None:
    """The check can fail: a shell module does load trio."""
    assert "trio" in loaded_by("harness.proxy.server")
