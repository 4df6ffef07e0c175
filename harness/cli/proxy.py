"""``tearline proxy``: the fault proxy on its own, in front of a real service; with ``--api``,
a Toxiproxy-compatible control API that creates proxies and changes their faults at runtime.

Both run until SIGINT or SIGTERM (one line, exit 130 or 0) or ``--max-connections``. Every
address is on the loopback interface unless ``--allow-remote`` says otherwise. Connections are
recorded one by one and only the last ``--keep-connections`` closed ones are kept, so the
proxy runs for days in constant memory.
"""

from __future__ import annotations

# The proxy, the faults and the scenario loader are imported where used: `tearline consume`
# (started once per case by consumer tests) should not pay for them.
import argparse
import ipaddress
import itertools
import signal
import sys
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from harness.evidence.timeline import FaultRecord
    from harness.faults.config import Fault
    from harness.link.live import LinkTraits

from harness.cli.linkargs import hostport
from harness.cli.types import bounded_float
from reference_impl.framing import FramingName

DEFAULT_API = ("127.0.0.1", 8474)
EXIT_SIGINT = 130
#: a connection whose one side has ended closes once the other sent nothing for this long
IDLE_AFTER_END_S = 10.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    proxy = sub.add_parser(
        "proxy",
        help="run the fault proxy in front of a real service (with --api: a Toxiproxy server)",
    )
    proxy.add_argument(
        "--listen",
        type=hostport,
        default=("127.0.0.1", 0),
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1, a port from the OS)",
    )
    proxy.add_argument(
        "--upstream",
        type=hostport,
        default=None,
        metavar="HOST:PORT",
        help="the service to proxy (required without --api)",
    )
    proxy.add_argument(
        "--faults",
        default=None,
        metavar="FILE",
        help="YAML file with a 'faults' list (as in a scenario)",
    )
    proxy.add_argument(
        "--framing",
        choices=[f.value for f in FramingName],
        default=None,
        help="the service's framing: the proxy decodes its stream as it relays it, so frame "
        "positions and frame faults work (without it: offsets, matches, characters, times)",
    )
    proxy.add_argument(
        "--http-body",
        "--sse-body",
        dest="sse_body",
        choices=["chunked", "close"],
        default="chunked",
        help="with --framing sse or ndjson-http: the body is chunked or ends at the close "
        "(default chunked)",
    )
    proxy.add_argument(
        "--api",
        type=hostport,
        nargs="?",
        const=DEFAULT_API,
        default=None,
        metavar="HOST:PORT",
        help="serve Toxiproxy's HTTP API here (default 127.0.0.1:8474); proxies and toxics are "
        "then created through it (docs/proxy-api.md)",
    )
    proxy.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="with --api: a JSON list of proxies to create at start (as POST /populate)",
    )
    proxy.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seeds every random choice (jitter, toxicity, slice sizes); the same seed and the "
        "same calls replay them",
    )
    proxy.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --api, --listen and proxies' listen addresses off the loopback interface "
        "(the API has no authentication: anyone who reaches it can proxy anything)",
    )
    proxy.add_argument(
        "--keep-connections",
        type=int,
        default=100,
        metavar="N",
        help="closed connections whose events are kept per proxy (default 100)",
    )
    proxy.add_argument(
        "--max-body",
        type=int,
        default=None,
        metavar="BYTES",
        help="with --api: the largest request body read (default 8 MiB; a longer one is "
        "answered 413)",
    )
    proxy.add_argument(
        "--max-connections",
        type=int,
        default=0,
        help="without --api: exit after this many connections closed (0: run until Ctrl-C)",
    )
    proxy.add_argument(
        "--idle-after-end-s",
        type=bounded_float(0.0, 86_400.0),
        default=IDLE_AFTER_END_S,
        metavar="SECONDS",
        help="once one side of a connection has ended, close the connection when the other "
        f"has sent nothing for this long (default {IDLE_AFTER_END_S:g}; 0: never)",
    )


def fault_lines(faults: Sequence[FaultRecord]) -> list[str]:
    """One line per fault applied, except that a run of the same fault doing the same thing
    (the read boundaries of a ``slice``, a ``latency`` per read) is one line with its count:
    a slice of a long stream would otherwise log a line per piece."""
    lines = []
    for (connection, direction, name, detail), run in itertools.groupby(
        faults, key=lambda f: (f.connection, f.direction, f.name, f.detail)
    ):
        first, *more = run
        where = "" if first.offset is None else f" at byte {first.offset}"
        if more:
            where = f" {len(more) + 1} times, at bytes {first.offset} to {more[-1].offset}"
        lines.append(f"connection {connection} {direction}: {name}{where}: {detail}")
    return lines


def _log(note: str) -> None:
    print(f"[tearline proxy] {note}", file=sys.stderr, flush=True)


def _os_error(err: BaseException) -> OSError | None:
    """``err``, or the OSError inside an exception group that holds nothing else."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    return err if isinstance(err, OSError) else None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _signals(stop: trio.Event, code: list[int]) -> None:
    """Until SIGINT (exit 130) or SIGTERM (exit 0): then say so once and set ``stop``."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            code[0] = EXIT_SIGINT if signum == signal.SIGINT else 0
            _log(f"{signal.Signals(signum).name}: shutting down")
            stop.set()
            return


async def _serve_one(args: argparse.Namespace, faults: tuple[Fault, ...], stop: trio.Event) -> str:
    """One proxy, as before the API: until ``--max-connections`` closed or ``stop``; '' or
    why it could not listen."""
    from harness.control.events import ConnectionLog  # noqa: PLC0415 - see the imports above
    from harness.running.assembly import fault_proxy  # noqa: PLC0415

    store = ConnectionLog(args.keep_connections)
    printed: dict[int, int] = {}

    def log(note: str) -> None:
        for record in store.records():
            faults_seen = record.timeline.faults
            done = printed.get(record.id, 0)
            for line in fault_lines(faults_seen[done:]):
                _log(line)
            printed[record.id] = len(faults_seen)
        for gone in set(printed) - {r.id for r in store.records()}:
            del printed[gone]
        _log(note)

    proxy = fault_proxy(
        args.upstream,
        faults,
        traits=_traits(args),
        seed=args.seed,
        log=log,
        store=store,
        idle_after_end_s=args.idle_after_end_s or None,
    )
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

            async def enough() -> None:
                while proxy.connections < args.max_connections or proxy.active:
                    await proxy.wait_closed_connection()
                stop.set()

            nursery.start_soon(enough)
        await stop.wait()
        nursery.cancel_scope.cancel()
    return ""


async def _serve_api(args: argparse.Namespace, stop: trio.Event) -> str:
    """The control API and its proxies, until ``stop``; '' or why it could not start."""
    from harness.api_server.runtime import ProxyRuntime  # noqa: PLC0415
    from harness.api_server.server import bound_port, serve_api  # noqa: PLC0415
    from harness.control.api import ApiRequest, ControlApi  # noqa: PLC0415
    from harness.control.bodies import MAX_BODY_BYTES  # noqa: PLC0415

    host, port = args.api
    async with trio.open_nursery() as nursery:
        runtime = ProxyRuntime(nursery, seed=args.seed, log=_log)
        window = args.keep_connections
        api = ControlApi(runtime, allow_remote=args.allow_remote, window=window, log=_log)
        if args.config:
            try:
                with open(args.config, "rb") as file:
                    body = file.read()
            except OSError as err:
                return f"{args.config}: {err.strerror}"
            wire = await api.handle(ApiRequest("POST", "/populate", body))
            if wire.status >= 300:
                await runtime.stop_all()
                return f"{args.config}: {wire.body.decode(errors='replace')}"
        try:
            serving = partial(serve_api, log=_log, max_body=args.max_body or MAX_BODY_BYTES)
            binds = await nursery.start(serving, api, host, port, stop.wait)
        except (OSError, ExceptionGroup) as err:  # (a bind error, alone or in a group)
            cause = _os_error(err)
            if cause is None:
                raise
            await runtime.stop_all()
            return f"cannot listen on {host}:{port}: {cause.strerror}"
        _log(
            f"Toxiproxy API on http://{host}:{bound_port(binds)}, {len(api.proxies)} proxy(ies), "
            f"seed {args.seed} (--seed {args.seed} replays)"
        )
        await stop.wait()
        await runtime.stop_all()
        nursery.cancel_scope.cancel()
    return ""


async def _main(args: argparse.Namespace, faults: tuple[Fault, ...]) -> tuple[int, str]:
    stop = trio.Event()
    code = [0]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_signals, stop, code)
        if args.api is not None:
            problem = await _serve_api(args, stop)
        else:
            problem = await _serve_one(args, faults, stop)
        nursery.cancel_scope.cancel()
    return code[0], problem


def _check(args: argparse.Namespace) -> str:
    if args.api is None and args.upstream is None:
        return "--upstream is required (or --api, to create proxies through the API)"
    if args.api is not None and (args.faults or args.upstream):
        return "--faults and --upstream describe the proxy without --api; with --api use the API"
    if not args.allow_remote:
        for what, address in (("--api", args.api), ("--listen", args.listen)):
            if address is not None and not _is_loopback(address[0]):
                return (
                    f"{what} {address[0]} is not a loopback address; pass --allow-remote to "
                    "listen there (the proxy forwards anything, the API has no authentication)"
                )
    return ""


def _traits(args: argparse.Namespace) -> LinkTraits:
    from harness.link.live import LinkTraits  # noqa: PLC0415
    from reference_impl.framing import FramingOptions  # noqa: PLC0415

    return LinkTraits(args.framing, FramingOptions(sse_body=args.sse_body))


def proxy(args: argparse.Namespace) -> int:
    from harness.link.case_wire import check_placeable  # noqa: PLC0415
    from harness.scenario import ScenarioError  # noqa: PLC0415
    from harness.scenario.loader import load_faults_file  # noqa: PLC0415

    if problem := _check(args):
        print(f"tearline proxy: {problem}", file=sys.stderr)
        return 2
    faults: tuple[Fault, ...] = ()
    if args.faults:
        try:
            faults = load_faults_file(args.faults)
        except ScenarioError as err:
            print(err, file=sys.stderr)
            return 2
        # Say now, not when the first connection reaches it, what no stream can have: a frame
        # position without --framing, a length field where the framing has none.
        misplaced = check_placeable(faults, _traits(args))
        if misplaced:
            hint = " (give --framing)" if args.framing is None else ""
            print(f"{args.faults}: {misplaced}{hint}", file=sys.stderr)
            return 2
    try:
        code, problem = trio.run(_main, args, faults)
    except KeyboardInterrupt:  # a second Ctrl-C during the shutdown
        return EXIT_SIGINT
    except Exception as err:  # a bug: one line, not a traceback
        while isinstance(err, ExceptionGroup) and err.exceptions:
            err = err.exceptions[0]
        print(f"tearline proxy: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    if problem:
        print(f"tearline proxy: {problem}", file=sys.stderr)
        return 2
    return code
