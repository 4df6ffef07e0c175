"""Debian's Chromium driven by Playwright (no browser download), for the report tests, the
screenshot and ``benchmarks/bench_reports.py``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, sync_playwright

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY = "html[data-ready='true']"  # the page's script has its case index and listens


@contextmanager
def chromium(profile: Path, executable: str | None = None) -> Iterator[BrowserContext]:
    """A headless Chromium with its own profile folder."""
    path = executable or shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=path, headless=True, args=FLAGS
        )
        try:
            yield context
        finally:
            context.close()


def open_report(page: Page, index_html: Path, timeout_ms: float = 120_000) -> None:
    """Load a report page from ``file://`` and wait until its script is ready (generous: the
    tests assert behaviour, never time)."""
    page.goto(index_html.as_uri())
    page.wait_for_selector(READY, state="attached", timeout=timeout_ms)
