"""Users' own consumer programs: how tearline starts them and reads their verdict.

The contract (``docs/consumer-contract.md``): tearline runs ``link.consumer.command`` with every
``{name}`` of ``contract_values`` replaced in its arguments (where to connect, the framing and
payload, every consumer setting of the case, the producer mode, the deadline, TLS) and the
same values in the environment as ``TEARLINE_<NAME>``. The program connects, consumes one
stream, and prints its report (one JSON object, see ``reference_impl/report.py``) as the last
line of its standard output. A program that hangs is killed at the case deadline (no verdict);
one that exits without a valid report has no verdict either, and the diagnosis quotes its exit
status and the tail of its standard error. ``tearline consume`` takes every value as an option,
and a Python consumer function gets them all in its ``LinkInfo``.

Over TLS (``link.tls``) the program connects with TLS and is given the run CA's file as
``{ca_file}`` (``TEARLINE_CA_FILE``) and in the variables common clients read their trust store
from (``TRUST_STORE_VARIABLES``), so most trust the proxy without a change of code.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field

import trio

from harness.link.reference import request_of
from harness.running.tls import ca_file
from harness.scenario import Link, TokensConfig
from reference_impl.report import MAX_REPORT_BYTES, ConsumerReport, ReportFormatError, from_json

STDERR_TAIL = 300
#: how long a program's pipes may stay open after it exited (a child of it holding them)
PIPE_GRACE_S = 1.0
#: where OpenSSL (Python's ssl, curl, httpx, aiohttp), requests and gRPC find the CAs to trust
TRUST_STORE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")


def contract_values(
    link: Link, host: str, port: int, deadline_ms: float = 10000.0, request_file: str = ""
) -> dict[str, str]:
    """What the contract tells a consumer program: ``{name}`` placeholders and the
    ``TEARLINE_NAME`` environment variables (``docs/consumer-contract.md``)."""
    tokens = link.payload_config if isinstance(link.payload_config, TokensConfig) else None
    pause = link.consumer.pause_at_message
    request = request_of(link)
    return {
        "host": host,
        "port": str(port),
        "framing": link.framing,
        "payload": link.payload,
        "profile": (tokens or TokensConfig()).profile,
        "incomplete_message_timeout_ms": f"{link.consumer.incomplete_message_timeout_ms:g}",
        "idle_timeout_ms": f"{link.consumer.idle_timeout_ms:g}",
        "accept_partial_at_safe_boundary": str(
            link.consumer.accept_partial_at_safe_boundary
        ).lower(),
        "max_reconnects": str(link.consumer.max_reconnects),
        "max_message_bytes": str(link.framing_options.max_message_bytes),
        "sse_body": link.framing_options.sse_body,
        "path": link.request_path,
        "method": request.method_for(link.framing),
        "request_file": request_file,
        "producer_mode": link.producer.mode,
        "read_bytes": str(link.consumer.read_bytes),
        "pause_at_message": "" if pause is None else str(pause),
        "pause_ms": f"{link.consumer.pause_ms:g}",
        "unframed": str(link.consumer.unframed).lower(),
        "deadline_ms": f"{deadline_ms:g}",
        "tls": str(link.tls).lower(),
        "ca_file": ca_file(link),
    }


def request_json(link: Link, host: str, port: int) -> str:
    """The request a consumer program makes, whole (``{request_file}``): method, path,
    headers as [name, value] pairs, the body in base64; ``{host}`` and ``{port}`` filled in."""
    request = request_of(link).filled(host, port)
    return json.dumps(
        {
            "method": request.method_for(link.framing),
            "path": request.path,
            "headers": [list(pair) for pair in request.headers],
            "body": base64.b64encode(request.body).decode(),
        }
    )


def command_for(
    link: Link, host: str, port: int, deadline_ms: float = 10000.0, request_file: str = ""
) -> tuple[list[str], dict[str, str]]:
    """The consumer program's argv and environment for one case."""
    values = contract_values(link, host, port, deadline_ms, request_file)
    assert link.consumer.command is not None
    argv = [_substitute(arg, values) for arg in link.consumer.command]
    env = dict(os.environ)
    env.update({f"TEARLINE_{key.upper()}": value for key, value in values.items()})
    if link.tls:
        env.update(dict.fromkeys(TRUST_STORE_VARIABLES, values["ca_file"]))
    return argv, env


def _substitute(arg: str, values: dict[str, str]) -> str:
    """``arg`` with each ``{name}`` of ``values`` replaced. Other braces stay as written (a JSON
    or shell argument), where ``str.format`` would raise on them."""
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


class Tail:
    """The last ``keep`` bytes a pipe carried (a program's output is never held whole: a
    consumer that prints gigabytes costs ``keep`` bytes)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()
        self.total = 0

    async def read_from(self, pipe: trio.abc.ReceiveStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while chunk := await pipe.receive_some(65536):
                self.total += len(chunk)
                self.data += chunk
                if len(self.data) > self.keep:
                    del self.data[: len(self.data) - self.keep]

    def text(self) -> str:
        return self.data.decode(errors="replace")


@dataclass(slots=True)
class ProgramOutput:
    """What a consumer program printed and how it ended, kept even when the case deadline
    kills it (a killed consumer's diagnosis shows its stderr)."""

    # room for a line one byte too long and its newline: a longer line shows as too long
    stdout: Tail = field(default_factory=lambda: Tail(MAX_REPORT_BYTES + 2))
    stderr: Tail = field(default_factory=lambda: Tail(STDERR_TAIL))
    returncode: int | None = None

    def stderr_tail(self) -> str:
        return self.stderr.text().strip()[-STDERR_TAIL:]


async def _run_program(argv: list[str], env: dict[str, str], output: ProgramOutput) -> None:
    """Run to its end (or until cancelled: then its whole process group is killed), reading
    both pipes into ``output``."""
    process = await trio.lowlevel.open_process(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: a shell wrapper's children die too
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(output.stdout.read_from, process.stdout)
            nursery.start_soon(output.stderr.read_from, process.stderr)
            output.returncode = await process.wait()
            # the pipes end with the program, unless a child of it still holds them open:
            # then what came within the grace is all there is
            nursery.cancel_scope.deadline = trio.current_time() + PIPE_GRACE_S
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await process.wait()


async def run_external_consumer(
    link: Link, host: str, port: int, output: ProgramOutput, deadline_ms: float = 10000.0
) -> tuple[ConsumerReport | None, str]:
    """Run the user's consumer; (report, '') or (None, why there is none). What it printed
    is in ``output`` even when the case deadline cancels this."""
    with tempfile.TemporaryDirectory(prefix="tearline-") as folder:
        request_file = os.path.join(folder, "request.json")
        with open(request_file, "w", encoding="utf-8") as file:
            file.write(request_json(link, host, port))
        argv, env = command_for(link, host, port, deadline_ms, request_file)
        try:
            await _run_program(argv, env, output)
        except OSError as err:
            return None, f"cannot start consumer {argv[0]!r}: {err.strerror}"
    code, stderr = output.returncode, output.stderr_tail()
    lines = [line for line in output.stdout.text().splitlines() if line.strip()]
    if not lines:
        return None, f"consumer exited {code} without a report; stderr: {stderr!r}"
    if len(lines[-1].encode()) > MAX_REPORT_BYTES:
        printed = output.stdout.total
        return (
            None,
            f"consumer exited {code} with a report line over {MAX_REPORT_BYTES} bytes "
            f"({printed} bytes printed in all)",
        )
    try:
        report = from_json(lines[-1])
    except (ReportFormatError, TypeError) as err:  # TypeError: e.g. "accepted": 5
        return None, f"consumer exited {code} with an invalid report ({err})"
    if problem := _shape_problem(report):
        return None, f"consumer exited {code} with an invalid report ({problem})"
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
