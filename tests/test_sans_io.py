"""The pure core never imports trio: codecs, payloads, guards, the consumer session."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE = sorted(
    [
        *(ROOT / "reference_impl" / "framing").glob("*.py"),
        *(ROOT / "reference_impl" / "payload").glob("*.py"),
        *(
            ROOT / "reference_impl" / name
            for name in (
                "framing_guard.py",
                "partial_stream_guard.py",
                "session.py",
                "payload_sides.py",
                "link.py",
                "report.py",
                "errors.py",
                "events.py",
            )
        ),
    ]
)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", PURE, ids=lambda p: p.name)
def test_pure_module_does_not_import_trio(path: Path) -> None:
    assert {"trio", "socket", "asyncio"}.isdisjoint(_imports(path))


def test_the_pure_list_is_not_empty() -> None:
    assert len(PURE) >= 15
