"""The consumer contract is one set of values, told the same way to every kind of consumer.

``harness.running.external.contract_values`` is what a consumer program gets (placeholders and
``TEARLINE_*`` variables). The command on ``docs/consumer-contract.md`` that runs the reference
consumer as a program must hand it exactly what the in-process reference consumer is told for
the same case, every setting included; a Python consumer function's ``LinkInfo`` must carry every
value too, and the program shim (``python -m harness.workers.program``) must rebuild the same
``LinkInfo`` from the environment.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

from harness.cli.linkargs import consumer_policy
from harness.cli.main import build_parser
from harness.consumers.api import LinkInfo
from harness.consumers.linkinfo import link_info
from harness.link.reference import consumer_policy as reference_policy
from harness.running.external import contract_values, request_json
from harness.scenario import load_text
from harness.scenario.model import Link
from harness.workers.program import link_from_env
from reference_impl.framing.request import Request
from reference_impl.link.consumer_config import ConsumerPolicy

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "consumer-contract.md"

#: a link whose every consumer setting differs from its default
LINK = """
name: everything-set
description: Every setting a consumer is told, away from its default.
link:
  framing: sse
  payload: tokens
  tokens: {profile: anthropic}
  framing_options: {sse_body: close, max_message_bytes: 999, path: /v1/stream}
  producer: {mode: continue}
  consumer:
    idle_timeout_ms: 2500
    incomplete_message_timeout_ms: 750
    max_reconnects: 2
    accept_partial_at_safe_boundary: true
    read_bytes: 7
    pause_at_message: 3
    pause_ms: 250
    unframed: true
expect: {complete: false}
"""


def documented_command() -> str:
    """The ``tearline consume ...`` command of the contract page, as one line."""
    text = CONTRACT.read_text()
    (block,) = re.findall(r"```sh\n(tearline consume .*?)```", text, re.DOTALL)
    return " ".join(block.replace("\\\n", " ").split())


def the_link() -> Link:
    (scenario,) = load_text(LINK)
    return scenario.link


#: what ``{request_file}`` carries whole (and the reference consumer reads from it)
IN_THE_REQUEST_FILE = {"method", "path"}


def _request_file(link: Link, folder: Path) -> str:
    path = folder / "request.json"
    path.write_text(request_json(link, "127.0.0.1", 4000), encoding="utf-8")
    return str(path)


def test_the_documented_command_uses_every_value_of_the_contract() -> None:
    used = set(re.findall(r"\{(\w+)\}", documented_command()))
    wanted = set(contract_values(the_link(), "127.0.0.1", 1)) - {"tls"} - IN_THE_REQUEST_FILE
    assert used == wanted


def test_the_documented_command_tells_the_reference_consumer_what_it_is_told_in_process(
    tmp_path: Path,
) -> None:
    link = the_link()
    line = documented_command()
    request_file = _request_file(link, tmp_path)
    for name, value in contract_values(link, "127.0.0.1", 4000, 9000.0, request_file).items():
        line = line.replace("{" + name + "}", value)
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert args.connect == ("127.0.0.1", 4000)
    assert args.deadline_ms == 9000.0
    mine, theirs = consumer_policy(args), reference_policy(link)
    # the file holds the request as sent (its method resolved, {host} and {port} filled in)
    assert _sent(mine) == _sent(theirs)
    assert _without_request(mine) == _without_request(theirs)


def _sent(policy: ConsumerPolicy) -> Request:
    request = policy.config.framing_options.request.filled("127.0.0.1", 4000)
    return replace(request, method=request.method_for(policy.config.framing))


def _without_request(policy: ConsumerPolicy) -> ConsumerPolicy:
    options = replace(policy.config.framing_options, request=Request())
    return replace(policy, config=replace(policy.config, framing_options=options))


def test_a_function_is_told_every_value_of_the_contract(tmp_path: Path) -> None:
    link = the_link()
    info = link_info(link, "127.0.0.1", 4000, deadline_s=9.0)
    request_file = _request_file(link, tmp_path)  # the function gets the request itself
    assert (info.method, info.headers, info.body) == ("GET", (), b"")
    told = {
        "host": info.host,
        "port": str(info.port),
        "framing": info.framing,
        "payload": info.payload,
        "profile": info.profile,
        "incomplete_message_timeout_ms": f"{info.incomplete_message_timeout_s * 1000:g}",
        "idle_timeout_ms": f"{info.idle_timeout_s * 1000:g}",
        "accept_partial_at_safe_boundary": str(info.accept_partial_at_safe_boundary).lower(),
        "max_reconnects": str(info.max_reconnects),
        "max_message_bytes": str(info.max_message_bytes),
        "sse_body": info.sse_body,
        "path": info.path,
        "method": info.method,
        "request_file": request_file,
        "producer_mode": info.producer_mode,
        "read_bytes": str(info.read_bytes),
        "pause_at_message": str(info.pause_at_message),
        "pause_ms": f"{info.pause_s * 1000:g}",
        "unframed": str(info.unframed).lower(),
        "deadline_ms": f"{info.deadline_s * 1000:g}",
        "tls": str(info.tls).lower(),
        "ca_file": info.ca_file or "",
    }
    assert told == contract_values(link, "127.0.0.1", 4000, 9000.0, request_file)


def test_the_program_shim_rebuilds_the_function_s_link_info_from_the_environment(
    tmp_path: Path,
) -> None:
    link = the_link()
    values = contract_values(link, "127.0.0.1", 4000, 9000.0, _request_file(link, tmp_path))
    env = {f"TEARLINE_{name.upper()}": value for name, value in values.items()}
    assert link_from_env(env) == link_info(link, "127.0.0.1", 4000, deadline_s=9.0)


def test_link_info_has_a_field_for_each_value() -> None:
    """``{name_ms}`` is ``name_s`` (LinkInfo's times are in seconds); every other name as is."""
    names = set(contract_values(the_link(), "h", 1)) - {"request_file"}  # given as the request
    wanted = {n.removesuffix("_ms") + "_s" if n.endswith("_ms") else n for n in names}
    assert wanted <= set(LinkInfo.__dataclass_fields__)
