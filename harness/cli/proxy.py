"""``tearline proxy``: the fault proxy on its own, in front of a real service."""

from __future__ import annotations

# The proxy, the faults and the scenario loader are imported where used: `tearline consume`
# (started once per case by consumer tests) should not pay for them.
import argparse
import sys
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from harness.faults.config import Fault

from harness.cli.linkargs import hostport


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


async def _serve(args: argparse.Namespace, faults: tuple[Fault, ...]) -> str:
    from harness.judging.timeline import Timeline  # noqa: PLC0415
    from harness.proxy.server import Proxy, ProxyConfig  # noqa: PLC0415 - see the imports above

    """Serve until ``--max-connections`` closed (or Ctrl-C); '' or why it could not listen."""
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

    proxy = Proxy(ProxyConfig(args.upstream, faults, seed=args.seed, log=log), timeline)
    async with trio.open_nursery() as nursery:
        try:
            port = await nursery.start(proxy.serve, args.listen[0], args.listen[1])
        except OSError as err:  # here, not around trio.run: the nursery would wrap it in a group
            return f"cannot listen on {args.listen[0]}:{args.listen[1]}: {err.strerror}"
        _log(
            f"listening on {args.listen[0]}:{port} -> {args.upstream[0]}:{args.upstream[1]}, "
            f"{len(faults)} fault(s), seed {args.seed}"
        )
        if args.max_connections:
            while proxy.connections < args.max_connections or proxy.active:
                await proxy.wait_closed_connection()
            nursery.cancel_scope.cancel()
    return ""


def proxy(args: argparse.Namespace) -> int:
    from harness.link.locator import OffsetsLocator, check_positions  # noqa: PLC0415
    from harness.scenario import ScenarioError  # noqa: PLC0415
    from harness.scenario.loader import load_faults_file  # noqa: PLC0415

    faults: tuple[Fault, ...] = ()
    if args.faults:
        try:
            faults = load_faults_file(args.faults)
        except ScenarioError as err:
            print(err, file=sys.stderr)
            return 2
        # No expected wire here: only byte offsets and times can be placed. Say so now, not
        # when the first connection reaches the fault.
        problem = check_positions(faults, OffsetsLocator())
        if problem:
            print(f"{args.faults}: {problem}", file=sys.stderr)
            return 2
    problem = trio.run(_serve, args, faults)
    if problem:
        print(f"tearline proxy: {problem}", file=sys.stderr)
        return 2
    return 0
