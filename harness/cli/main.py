"""The ``tearline`` command."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from functools import partial
from importlib import metadata

import trio

from harness.cli import clients as clients_command
from harness.cli import hunt as hunt_command
from harness.cli import proxy as proxy_command
from harness.cli import record as record_command
from harness.cli import rules as rules_command
from harness.cli import scenario as scenario_commands
from harness.cli import shards as shards_command
from harness.cli import upgrade as upgrade_command
from harness.cli.linkargs import (
    add_consumer_arguments,
    add_link_arguments,
    add_producer_tls_arguments,
    consumer_config,
    consumer_policy,
    consumer_tls,
    hostport,
    link_from_args,
    producer_tls,
)
from reference_impl.defaults import LOOPBACK
from reference_impl.framing.request import Request, Route
from reference_impl.link.consumer_config import ConsumerPolicy
from reference_impl.peers.consumer import run_consumer
from reference_impl.peers.producer import Producer, ProducerConfig
from reference_impl.report import ConsumerReport, accepted_total, to_json


def _summary(report: ConsumerReport) -> str:
    lines = [
        f"verdict      {report.verdict}",
        f"complete     {report.complete}",
        f"error_code   {report.error_code}",
        f"accepted     {accepted_total(report)} messages in {report.reads} reads",
        f"directive    {report.directive}",
    ]
    lines += [f"  {k:<34} {v}" for k, v in asdict(report.recorded).items()]
    return "\n".join(lines)


async def _demo(args: argparse.Namespace) -> int:
    link = link_from_args(args)
    producer = Producer(ProducerConfig(link))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(producer.serve, LOOPBACK, 0)
        print(f"producer: {link.payload} over {link.framing} on {LOOPBACK}:{port}")
        report = await run_consumer(LOOPBACK, port, ConsumerPolicy(consumer_config(link)))
        nursery.cancel_scope.cancel()
    print(to_json(report) if args.json else _summary(report))
    return 0 if report.complete else 1


async def _produce(args: argparse.Namespace) -> int:
    link = link_from_args(args)
    if link.options.request != Request():  # the options describe an API: serve that only
        served = Route.of(link.options.request, link.framing)
        link = replace(link, options=replace(link.options, route=served))
    producer = Producer(ProducerConfig(link))
    tls = producer_tls(args)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(producer.serve, tls=tls), args.host, args.port)
        over = " over TLS" if tls else ""
        print(f"serving {link.payload} over {link.framing}{over} on {args.host}:{port}", flush=True)
    return 0


async def _consume(args: argparse.Namespace) -> int:
    host, port = args.connect
    policy = consumer_policy(args)
    deadline = math.inf if args.deadline_ms is None else args.deadline_ms / 1000
    with trio.move_on_after(deadline):
        report = await run_consumer(host, port, policy, consumer_tls(args))
        print(to_json(report) if args.json else _summary(report))
        return 0 if report.complete else 1
    print(f"tearline consume: no verdict within {args.deadline_ms:g} ms", file=sys.stderr)
    return 3


def _version() -> str:
    try:
        return metadata.version("tearline")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tearline", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tearline {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the reference link end to end on loopback")
    add_link_arguments(demo)
    demo.add_argument("--json", action="store_true", help="print the consumer report as JSON")
    produce = sub.add_parser("produce", help="serve the reference producer")
    add_link_arguments(produce)
    produce.add_argument("--host", default=LOOPBACK)
    produce.add_argument("--port", type=int, default=0)
    add_producer_tls_arguments(produce)
    consume = sub.add_parser("consume", help="run the reference consumer against HOST:PORT")
    add_link_arguments(consume)
    consume.add_argument("--connect", type=hostport, required=True, metavar="HOST:PORT")
    add_consumer_arguments(consume)
    consume.add_argument("--json", action="store_true")
    scenario_commands.add_parsers(sub)
    proxy_command.add_parser(sub)
    clients_command.add_parser(sub)
    hunt_command.add_parser(sub)
    record_command.add_parser(sub)
    rules_command.add_parser(sub)
    upgrade_command.add_parser(sub)
    shards_command.add_parser(sub)
    return parser


COMMANDS = {"demo": _demo, "produce": _produce, "consume": _consume}
SYNC_COMMANDS = {
    "run": scenario_commands.run,
    "validate": scenario_commands.validate,
    "list": scenario_commands.list_cases,
    "schema": scenario_commands.schema,
    "proxy": proxy_command.proxy,
    "clients": clients_command.clients,
    "hunt": hunt_command.hunt,
    "record": record_command.record,
    "rules": rules_command.rules,
    "upgrade": upgrade_command.upgrade,
    "report": shards_command.report,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in SYNC_COMMANDS:
            return SYNC_COMMANDS[args.command](args)
        return trio.run(COMMANDS[args.command], args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tearline list | head`
        sys.stderr.close()
        return 0
