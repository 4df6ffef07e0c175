"""Regenerate ``docs/report-screenshot.png``: run ``tests/reports/data/mixed.yaml``, write its
reports, and photograph index.html in headless Chromium.

    python -m tests.reports.make_screenshot [OUT.png]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from harness.cli.scenario import load_cases
from harness.reports.writer import write_reports
from harness.running.execute import run_all
from tests.reports.conftest import MIXED
from tests.reports.test_browser import FLAGS

ROOT = Path(__file__).parents[2]


def main(out: Path) -> None:
    results = run_all(load_cases([str(MIXED.relative_to(ROOT))]))
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        command = ["tearline", "run", "tests/reports/data/mixed.yaml", "--report", "reports"]
        write_reports(results, tmp, pcap="failing", elapsed_s=0.4, command=command)
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.goto((Path(tmp) / "index.html").as_uri())
        page.click('[data-filter-outcome="pass"]')  # hide the four non-passing cases...
        page.click('[data-filter-outcome="fail"]')  # ...but the failing one, then its details
        page.click('[data-filter-outcome="pass"]')
        page.screenshot(path=str(out))
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "report-screenshot.png")
