"""``tearline proxy``: the fault proxy on its own, in front of a real service."""

from __future__ import annotations

import argparse
import sys

import trio

from harness.linkargs import hostport
from harness.proxy import Proxy, ProxyConfig
from harness.scenario import ScenarioError
from harness.scenario.loader import load_faults_file
from harness.timeline import Timeline


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    proxy = sub.add_parser("proxy", help="run the fault proxy in front of a real service")
    proxy.add_argument(
        "--listen",
        type=hostport,
        default=("127.0.0.1", 0),
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1, a port from the OS)",
    )
    proxy.add_argument("--upstream", type=hostport, required=True, metavar="HOST:PORT")
    proxy.add_argument(
        "--faults",
        default=None,
        metavar="FILE",
        help="YAML file with a 'faults' list (as in a scenario)",
    )
    proxy.add_argument("--seed", type=int, default=0)
    proxy.add_argument(
        "--max-connections",
        type=int,
        default=0,
        help="exit after this many connections closed (0: run until Ctrl-C)",
    )


def _log(note: str) -> None:
    print(f"[tearline proxy] {note}", file=sys.stderr, flush=True)


async def _serve(args: argparse.Namespace, faults: tuple[object, ...]) -> None:
    timeline = Timeline()
    printed = 0

    def log(note: str) -> None:
        nonlocal printed
        for record in timeline.faults[printed:]:
            _log(
                f"connection {record.connection} {record.direction}: {record.name} at byte "
                f"{record.offset}: {record.detail}"
            )
        printed = len(timeline.faults)
        _log(note)

    proxy = Proxy(
        ProxyConfig(args.upstream, faults, seed=args.seed, log=log),  # type: ignore[arg-type]
        timeline,
    )
    async with trio.open_nursery() as nursery:
        port = await nursery.start(proxy.serve, args.listen[0], args.listen[1])
        _log(
            f"listening on {args.listen[0]}:{port} -> {args.upstream[0]}:{args.upstream[1]}, "
            f"{len(faults)} fault(s), seed {args.seed}"
        )
        if args.max_connections:
            while proxy.connections < args.max_connections or proxy.active:
                await proxy.wait_closed_connection()
            nursery.cancel_scope.cancel()


def proxy(args: argparse.Namespace) -> int:
    faults: tuple[object, ...] = ()
    if args.faults:
        try:
            faults = load_faults_file(args.faults)
        except ScenarioError as err:
            print(err, file=sys.stderr)
            return 2
    try:
        trio.run(_serve, args, faults)
    except OSError as err:
        print(
            f"tearline proxy: cannot listen on {args.listen[0]}:{args.listen[1]}: {err.strerror}",
            file=sys.stderr,
        )
        return 2
    return 0
