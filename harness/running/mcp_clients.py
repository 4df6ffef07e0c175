"""The client of an MCP session (payload mcp): tearline's, or a client adapter.

The reference client (``reference_impl/peers/mcp_client.py``) runs in this process and says
how each call ended. A client adapter (``link.consumer.function``, a real SDK's client: see
``harness/adapters/mcp_sdk.py``) runs in a process of its own (``harness.adapters.mcp_run``),
which prints one JSON line when it ends; the case's deadline kills it, so a client that waits
for ever is found out without a thread left hanging in tearline's.
"""

from __future__ import annotations

import json
import sys

import trio

from harness.judging.mcp import ClientOutcome
from harness.link.live import LinkTraits
from harness.scenario.model import Link, McpConfig
from reference_impl.defaults import LOOPBACK
from reference_impl.framing import FramingOptions
from reference_impl.mcp.client import Done
from reference_impl.mcp.jsonrpc import Response
from reference_impl.mcp.settings import MCP_PATH
from reference_impl.peers.mcp_client import McpHttpClient, failed

#: what the proxy's live streams decode each answer with: SSE (a JSON answer is no stream)
MCP_TRAITS = LinkTraits("sse", FramingOptions())
#: the most of a client adapter's output read
MAX_OUTPUT_BYTES = 65536


async def run_mcp_client(
    link: Link, config: McpConfig, port: int
) -> tuple[ClientOutcome | None, str]:
    """How the client ended against the proxy at ``port``: its outcome, or why it has none."""
    if link.consumer.function is None:
        return await _reference(link, config, port), ""
    return await _adapter(link, config, port, link.consumer.function)


async def _reference(link: Link, config: McpConfig, port: int) -> ClientOutcome:
    idle_s = link.consumer.idle_timeout_ms / 1000
    client = McpHttpClient(LOOPBACK, port, config.version, idle_timeout_s=idle_s)  # type: ignore[arg-type]
    steps = await client.run(config.steps, config.calls)
    answered = sum(
        1
        for step in steps
        if isinstance(step, Done)
        and isinstance(step.answer, Response)
        and "content" in step.answer.result
    )
    fail = failed(steps)
    if fail is None:
        return ClientOutcome(answered)
    return ClientOutcome(answered, fail.code.value, fail.detail)


def adapter_argv(function: str, url: str, config: McpConfig, idle_timeout_s: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "harness.adapters.mcp_run",
        function,
        url,
        str(config.calls),
        str(config.steps),
        str(idle_timeout_s),
    ]


async def _adapter(
    link: Link, config: McpConfig, port: int, function: str
) -> tuple[ClientOutcome | None, str]:
    url = f"http://{LOOPBACK}:{port}{MCP_PATH}"
    argv = adapter_argv(function, url, config, link.consumer.idle_timeout_ms / 1000)
    done = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False)
    return parse_output(done.returncode, done.stdout, done.stderr)


def parse_output(code: int, stdout: bytes, stderr: bytes) -> tuple[ClientOutcome | None, str]:
    """A client adapter's one JSON line: ``{"answered": n, "error": type or null, "detail"}``."""
    lines = stdout[:MAX_OUTPUT_BYTES].decode("utf-8", "replace").strip().splitlines()
    try:
        said = json.loads(lines[-1])
        outcome = ClientOutcome(
            int(said["answered"]), said.get("error"), str(said.get("detail", ""))
        )
    except (IndexError, ValueError, KeyError, TypeError):
        tail = stderr[-300:].decode("utf-8", "replace")
        return None, f"the client adapter said nothing readable (exit {code}): {tail!r}"
    return outcome, ""
