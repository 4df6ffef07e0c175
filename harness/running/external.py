"""Users' own consumer programs: how tearline starts them and reads their verdict.

The contract (``docs/consumer-contract.md``): tearline runs ``link.consumer.command`` with
``{host}``, ``{port}``, ``{framing}``, ``{payload}`` replaced in its arguments and the same values
in the environment (``TEARLINE_HOST``, ``TEARLINE_PORT``, ``TEARLINE_FRAMING``,
``TEARLINE_PAYLOAD``, ``TEARLINE_INCOMPLETE_MESSAGE_TIMEOUT_MS``, ``TEARLINE_PROFILE``). The
program connects, consumes one stream, and prints its report (one JSON object, see
``reference_impl/report.py``) as the last line of its standard output. A program that hangs is
killed at the case deadline (no verdict); one that exits without a valid report has no verdict
either, and the diagnosis quotes its exit status and the tail of its standard error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import trio

from harness.scenario import Link
from reference_impl.report import ConsumerReport, ReportFormatError, from_json

STDERR_TAIL = 300


def command_for(link: Link, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    values = {
        "host": host,
        "port": str(port),
        "framing": link.framing,
        "payload": link.payload,
        "profile": link.tokens.profile if link.tokens else "openai",
        "incomplete_message_timeout_ms": f"{link.consumer.incomplete_message_timeout_ms:g}",
        "idle_timeout_ms": f"{link.consumer.idle_timeout_ms:g}",
        "accept_partial_at_safe_boundary": str(
            link.consumer.accept_partial_at_safe_boundary
        ).lower(),
        "max_reconnects": str(link.consumer.max_reconnects),
        "max_message_bytes": str(link.framing_options.max_message_bytes),
        "sse_body": link.framing_options.sse_body,
    }
    assert link.consumer.command is not None
    argv = [_substitute(arg, values) for arg in link.consumer.command]
    env = dict(os.environ)
    env.update({f"TEARLINE_{key.upper()}": value for key, value in values.items()})
    return argv, env


def _substitute(arg: str, values: dict[str, str]) -> str:
    """``arg`` with each ``{name}`` of ``values`` replaced. Other braces stay as written (a JSON
    or shell argument), where ``str.format`` would raise on them."""
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


async def _kill_group(process: trio.Process) -> None:
    """At the deadline: kill the consumer and whatever it started (a shell wrapper's children
    would otherwise outlive the case). It had the whole deadline; no grace period."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


async def run_external_consumer(
    link: Link, host: str, port: int
) -> tuple[ConsumerReport | None, str]:
    """Run the user's consumer; (report, '') or (None, why there is none)."""
    argv, env = command_for(link, host, port)
    try:
        done = await trio.run_process(
            argv,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, for _kill_group
            deliver_cancel=_kill_group,
        )
    except OSError as err:
        return None, f"cannot start consumer {argv[0]!r}: {err.strerror}"
    lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line.strip()]
    stderr = done.stderr.decode(errors="replace").strip()[-STDERR_TAIL:]
    if not lines:
        return None, f"consumer exited {done.returncode} without a report; stderr: {stderr!r}"
    try:
        report = from_json(lines[-1])
    except (ReportFormatError, TypeError) as err:  # TypeError: e.g. "accepted": 5
        return None, f"consumer exited {done.returncode} with an invalid report ({err})"
    if problem := _shape_problem(report):
        return None, f"consumer exited {done.returncode} with an invalid report ({problem})"
    return report, ""


def _shape_problem(report: ConsumerReport) -> str:
    """'' or what is mistyped among the fields the judge reads (``from_json`` checks only
    ``verdict`` and ``complete``; a string where a number belongs would crash the judge)."""
    for i, accepted in enumerate(report.accepted):
        fields = (accepted.sha256, accepted.size, accepted.connection)
        if [type(value) for value in fields] != [str, int, int] or accepted.connection < 1:
            return f"accepted[{i}]: sha256 must be a string, size and connection (>= 1) integers"
    if report.error_code is not None and not isinstance(report.error_code, str):
        return "error_code: must be a string or null"
    return ""
