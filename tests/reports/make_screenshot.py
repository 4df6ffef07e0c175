"""Regenerate ``docs/report-screenshot.png``: run ``tests/reports/data/mixed.yaml``, write its
reports, and photograph index.html in headless Chromium.

    python -m tests.reports.make_screenshot [OUT.png]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness.artifacts.writer import write_reports
from harness.cli.scenario import load_cases
from harness.running.execute import run_all
from tests.reports.chromium import chromium, open_report
from tests.reports.conftest import MIXED

ROOT = Path(__file__).parents[2]


def main(out: Path) -> None:
    results = run_all(load_cases([str(MIXED.relative_to(ROOT))]))
    with tempfile.TemporaryDirectory() as tmp:
        command = ["tearline", "run", "tests/reports/data/mixed.yaml", "--report", "reports"]
        write_reports(results, tmp, pcap="failing", elapsed_s=0.4, command=command)
        with chromium(Path(tmp) / "profile") as browser:
            page = browser.new_page()
            page.set_viewport_size({"width": 1280, "height": 1400})
            open_report(page, Path(tmp) / "index.html")
            page.screenshot(path=str(out))  # totals, the matrix, the first failing case


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "report-screenshot.png")
