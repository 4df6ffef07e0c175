"""What a short connection costs through a proxy: tearline, Toxiproxy, and the least a trio
proxy can do.

Run with ``python -m benchmarks.bench_connections [--conns 3000 --rounds 3]``.

``--clients`` threads open ``--conns`` connections in all through each proxy, each echoing
1 KiB once (``bench_proxy_soak.py``'s clients, with no toxic churn), in interleaved rounds.
Printed per connection: wall time and the proxy process's CPU time (user + system, from
``/proc``), which is the steadier figure; ratios against the baseline, a 20-line trio proxy
(accept, dial, two copy loops: ``minimal`` below, started as ``--serve-minimal``), which is the
floor for any proxy built on trio's tasks and streams.

- ``tearline``: ``tearline proxy --api``, a proxy made through its API, no toxic;
- ``toxiproxy``: ``../shared/anchors/toxiproxy/toxiproxy-server``, the same (left out when
  absent).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import trio

from benchmarks.bench_proxy_api import (
    LOOPBACK,
    ROOT,
    TOXIPROXY,
    Api,
    echo,
    free_port,
    proxy,
    serve_forever,
    serving,
    wait_port,
)
from benchmarks.bench_proxy_soak import run_clients

READ_BYTES = 262144


async def _copy(src: trio.SocketStream, dst: trio.SocketStream) -> None:
    try:
        while data := await src.receive_some(READ_BYTES):
            await dst.send_all(data)
        await dst.send_eof()
    except trio.BrokenResourceError:
        pass


async def minimal(upstream: int, port: int) -> None:
    """The baseline proxy: every connection to ``port`` relayed to ``upstream``."""

    async def handle(client: trio.SocketStream) -> None:
        up = await trio.open_tcp_stream(LOOPBACK, upstream)
        async with up, trio.open_nursery() as nursery:
            nursery.start_soon(_copy, up, client)
            await _copy(client, up)

    await trio.serve_tcp(handle, port, host=LOOPBACK)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def started(kind: str, upstream: int) -> Iterator[tuple[int, int]]:
    """The proxy ``kind`` in front of ``upstream``, in its own process: (pid, its port)."""
    if kind != "minimal":
        with serving(kind, TOXIPROXY) as (pid, control):
            yield pid, proxy(Api(control), "conns", upstream)
        return
    port = free_port()
    argv = [sys.executable, "-m", "benchmarks.bench_connections", "--serve-minimal"]
    argv += [str(upstream), str(port)]
    quiet = subprocess.DEVNULL
    process = subprocess.Popen(argv, cwd=ROOT, stdout=quiet, stderr=quiet)
    try:
        wait_port(port)
        yield process.pid, port
    finally:
        process.terminate()
        process.wait(10)


def measure(kind: str, upstream: int, conns: int, clients: int) -> tuple[float, float]:
    """(wall, proxy CPU) seconds per connection for ``conns`` short connections."""
    with started(kind, upstream) as (pid, port):
        run_clients(port, 50, clients, 1)  # warm-up: imports, first allocations
        cpu, start = cpu_s(pid), time.perf_counter()
        errors = run_clients(port, conns, clients, 1)
        wall, used = time.perf_counter() - start, cpu_s(pid) - cpu
    if errors:
        raise RuntimeError(f"{kind}: {errors} connections failed")
    return wall / conns, used / conns


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conns", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-minimal", nargs=2, type=int, metavar=("UPSTREAM", "PORT"))
    args = parser.parse_args(argv)
    if args.serve_minimal:
        trio.run(minimal, *args.serve_minimal)
        return 0
    kinds = ["minimal", "tearline"] + (["toxiproxy"] if TOXIPROXY.exists() else [])
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
        f"{os.getloadavg()[0]:.1f}, {args.conns} connections x {args.rounds} rounds, "
        f"{args.clients} clients, 1 KiB echoed each"
    )
    upstream = serve_forever(echo)
    got: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for _ in range(args.rounds):
        for kind in kinds:
            got[kind].append(measure(kind, upstream, args.conns, args.clients))
    base_wall = statistics.median(w for w, _ in got["minimal"])
    base_cpu = statistics.median(c for _, c in got["minimal"])
    print(f"{'per connection':16}{'wall us':>9}{'x minimal':>11}{'CPU us':>9}{'x minimal':>11}")
    for kind in kinds:
        wall = statistics.median(w for w, _ in got[kind])
        cpu = statistics.median(c for _, c in got[kind])
        print(
            f"{kind:16}{wall * 1e6:9.0f}{wall / base_wall:11.2f}{cpu * 1e6:9.0f}"
            f"{cpu / base_cpu:11.2f}"
        )
    print(f"load at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
