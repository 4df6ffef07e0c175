"""Run an MCP client adapter in a process of its own and say how it ended, as one JSON line:
``{"answered": n, "error": "<exception type>" or null, "detail": "..."}``.

``python -m harness.adapters.mcp_run MODULE:FUNCTION URL CALLS STEPS IDLE_TIMEOUT_S``; the
function is an async generator ``(url, calls, steps, idle_timeout_s)`` that yields each tool
call's result as it returns (``mcp_sdk.py``). It runs on asyncio (the SDKs' anyio default).
Whoever started the process kills it at the case's deadline: a client that waits for ever
says nothing, and that is the finding.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import AsyncIterator, Callable


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what the library raised."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def _run(function: Callable[..., AsyncIterator[str]], argv: list[str]) -> dict[str, object]:
    url, calls, steps, idle_s = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    answered = 0
    try:
        async for _ in function(url, calls, steps, idle_s):
            answered += 1
    except Exception as error:
        leaf = _leaf(error)
        return {"answered": answered, "error": type(leaf).__name__, "detail": str(leaf)[:300]}
    return {"answered": answered, "error": None, "detail": ""}


def main(argv: list[str]) -> int:
    module, _, name = argv[0].partition(":")
    function = getattr(importlib.import_module(module), name)
    said = asyncio.run(_run(function, argv[1:]))
    print(json.dumps(said), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
