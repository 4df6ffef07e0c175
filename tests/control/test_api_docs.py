"""The toxiproxy-python examples of ``docs/proxy-api.md``'s "Beyond Toxiproxy" section run as
written, in order, in one session against a live API, and each prints what the page shows
under it (the client's default address points at the test's API, as the page's own session
points it at ``127.0.0.1:8474``)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import trio

from tests.control.conftest import Api

DOC = Path(__file__).resolve().parents[2] / "docs" / "proxy-api.md"
SECTION = "## Beyond Toxiproxy"


def examples() -> list[tuple[str, str | None]]:
    """The section's python blocks, each with the text block that follows it (if one does)."""
    text = DOC.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    found = re.findall(r"^```(\w+)\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    pairs: list[tuple[str, str | None]] = []
    for (lang, body), after in zip(found, [*found[1:], ("", "")], strict=True):
        if lang == "python":
            pairs.append((body, after[1] if after[0] == "text" else None))
    return pairs


def _run(blocks: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """Each block executed in one namespace; what each printed, next to what the page shows."""
    namespace: dict[str, Any] = {"__name__": "proxy_api_doc"}
    printed = []
    try:
        for code, shown in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(DOC), "exec"), namespace)  # the page's own code
            printed.append((out.getvalue(), shown))
    finally:
        if "echo" in namespace:
            namespace["echo"].shutdown()
            namespace["echo"].server_close()
    return printed


def test_the_section_has_an_example_of_each_addition() -> None:
    codes = [code for code, _ in examples()]
    assert len(codes) == 5
    for key in ('"toxics"', '"client"', '"connection"', '"from"'):
        assert any(key in code for code in codes), key


async def test_the_examples_print_what_the_page_shows(api: Api) -> None:
    printed = await trio.to_thread.run_sync(_run, examples())
    assert [out for out, _ in printed] == [shown or "" for _, shown in printed]
