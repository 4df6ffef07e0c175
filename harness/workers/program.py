"""A consumer function as a consumer program of the external contract:
``python -m harness.workers.program MODULE:FUNCTION``.

It reads the contract's ``TEARLINE_*`` environment (``docs/consumer-contract.md``), calls the
function once, and prints the report ``harness.consumers.report`` builds as its last line; a
call with no report prints the diagnosis on standard error and exits 1. The same function run
this way and as ``--consumer-function`` gets the same report and the same ``LinkInfo``: the
contract passes every setting; only ``ws_text``, which the frames themselves say, keeps its
default. What differs is the cost of starting a program per case (``docs/python-consumers.md``,
"Overhead").
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Mapping

from harness.consumers.api import LinkInfo, url_for
from harness.consumers.report import report_of
from harness.workers.calling import call
from harness.workers.worker import ResolveError, resolve
from reference_impl.report import to_json


def link_from_env(env: Mapping[str, str]) -> LinkInfo:
    """The ``LinkInfo`` of the contract's environment (``KeyError`` for a missing variable)."""

    def value(name: str) -> str:
        return env[f"TEARLINE_{name.upper()}"]

    host, port, framing, payload = (
        value("host"),
        int(value("port")),
        value("framing"),
        value("payload"),
    )
    pause = value("pause_at_message")
    method, body = value("method"), b""
    headers: tuple[tuple[str, str], ...] = ()
    if value("request_file"):  # the whole request, headers and body included
        with open(value("request_file"), encoding="utf-8") as file:
            request = json.load(file)
        method = request["method"]
        headers = tuple((name, text) for name, text in request["headers"])
        body = base64.b64decode(request["body"])
    return LinkInfo(
        host=host,
        port=port,
        framing=framing,
        payload=payload,
        profile=value("profile") if payload == "tokens" else None,
        url=url_for(framing, host, port, value("path")),
        path=value("path"),
        method=method,
        headers=headers,
        body=body,
        incomplete_message_timeout_s=float(value("incomplete_message_timeout_ms")) / 1000,
        idle_timeout_s=float(value("idle_timeout_ms")) / 1000,
        deadline_s=float(value("deadline_ms")) / 1000,
        max_reconnects=int(value("max_reconnects")),
        max_message_bytes=int(value("max_message_bytes")),
        accept_partial_at_safe_boundary=value("accept_partial_at_safe_boundary") == "true",
        sse_body=value("sse_body"),
        producer_mode=value("producer_mode"),
        read_bytes=int(value("read_bytes")),
        pause_at_message=int(pause) if pause else None,
        pause_s=float(value("pause_ms")) / 1000,
        unframed=value("unframed") == "true",
        tls=value("tls") == "true",
        ca_file=value("ca_file") or None,
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m harness.workers.program MODULE:FUNCTION", file=sys.stderr)
        return 2
    try:
        function = resolve(argv[1])
        link = link_from_env(os.environ)
    except ResolveError as err:
        print(err, file=sys.stderr)
        return 2
    except (KeyError, ValueError) as err:
        print(f"not run by tearline (the contract's environment: {err})", file=sys.stderr)
        return 2
    report, problem = report_of(call(function, link))
    if report is None:
        print(problem, file=sys.stderr)
        return 1
    print(to_json(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
