"""``pytest scenarios/`` works where pytest-xdist is not installed (the main job's install):
the project's pytest configuration adds no option that needs a plugin (``-n`` lives in the
test command, not in ``addopts``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_scenario_file_runs_as_pytest_items_without_xdist() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "scenarios/framing-grpc/compressed-flag.yaml",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (done.returncode, "unrecognized arguments" in done.stderr) == (0, False)
    assert " passed" in done.stdout.splitlines()[-1]
