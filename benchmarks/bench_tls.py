"""What TLS termination costs the fault proxy: throughput plain and over TLS, in one run.

Run with ``python -m benchmarks.bench_tls`` (defaults ``--mib 128 --rounds 3``, seconds on an
idle machine; ``--mib 512 --rounds 5`` for steadier figures). The same ``--mib`` MiB go from a
server to a client, in interleaved rounds (a noisy, shared machine hurts every path alike); the
table gives medians and the ratio of each path to ``plain``:

- ``direct``, ``direct-tls``: the client connects to the server itself, over TCP or TLS (the
  ceilings: ``direct-tls`` is what the two ends' own TLS allows).
- ``plain``: tearline's proxy between them, plain TCP on both sides (the copy loop of
  ``harness/proxy/sockio.py``).
- ``tls``: the proxy terminating TLS toward the client and originating TLS toward the server
  (verifying its certificate), so it decrypts and re-encrypts every byte: the faults see
  plaintext. The server's certificate and the proxy's come from one test CA
  (``harness/running/certificates.py``) that the client and the proxy trust.

The proxy runs in its own process (this script, ``--serve-proxy``), no faults, for one
connection; the ends are blocking sockets in threads (``ssl`` releases the GIL while it
encrypts). Besides MiB/s the table gives the proxy process's CPU seconds per GiB (start-up,
measured on an empty transfer, taken off), which other load disturbs much less than wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import resource
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from benchmarks.bench_proxy import LOOPBACK, MIB, running

BLOCK = 1 << 20
WIDTH = 11
#: A path from a client to a server: given the server's port, yields the port to connect to.
PathOf = Callable[[int], contextlib.AbstractContextManager[int]]


class Ends:
    """The TLS material of a run: one test CA, the loopback certificate's files."""

    def __init__(self, folder: Path) -> None:
        from harness.running.certificates import new_authority  # noqa: PLC0415 - the one module with trustme

        self.authority = new_authority(folder)
        self.identity = folder / "identity.pem"
        self.authority.write_identity(self.identity)

    def server(self) -> ssl.SSLContext:
        return self.authority.server_context(["http/1.1"])

    def client(self) -> ssl.SSLContext:
        return self.authority.client_context(["http/1.1"])


# ---- the two ends ----------------------------------------------------------------------------


def serve_once(total: int, context: ssl.SSLContext | None) -> tuple[int, threading.Thread]:
    """A thread that accepts one connection (over TLS with ``context``) and sends ``total``
    bytes, then closes; returns the port."""
    listener = socket.create_server((LOOPBACK, 0))
    port = int(listener.getsockname()[1])
    block = memoryview(b"\x5a" * BLOCK)

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
        if context is not None:
            conn = context.wrap_socket(conn, server_side=True)
        with conn:
            left = total
            while left > 0:
                conn.sendall(block[: min(left, BLOCK)])
                left -= BLOCK
            # the end, then wait for the client's, so the proxy ends both legs cleanly
            if isinstance(conn, ssl.SSLSocket):
                with contextlib.suppress(OSError):  # a client's close without close_notify
                    conn.unwrap()  # close_notify, then the peer's
            else:
                conn.shutdown(socket.SHUT_WR)
                conn.recv(1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return port, thread


def receive_all(port: int, context: ssl.SSLContext | None) -> tuple[int, float]:
    """Connect (over TLS with ``context``), read until the end; (bytes, seconds)."""
    buffer = memoryview(bytearray(BLOCK))
    received = 0
    start = time.perf_counter()
    raw = socket.create_connection((LOOPBACK, port))
    conn = raw if context is None else context.wrap_socket(raw, server_hostname=LOOPBACK)
    with conn:
        while count := conn.recv_into(buffer):
            received += count
        elapsed = time.perf_counter() - start
    return received, elapsed


# ---- the proxy, in its own process --------------------------------------------------------------


def serve_proxy(upstream: int, folder: Path | None) -> None:
    """``--serve-proxy``: the proxy for one connection, TLS on both sides with ``folder``'s
    files (``Ends``), else plain; prints ``listening on HOST:PORT`` on stderr."""
    import trio  # noqa: PLC0415

    from harness.evidence.timeline import Timeline  # noqa: PLC0415
    from harness.proxy.server import Proxy, ProxyConfig  # noqa: PLC0415
    from harness.proxy.tlsio import Originate, ProxyTls  # noqa: PLC0415
    from harness.running.certificates import CA_FILE_NAME  # noqa: PLC0415

    tls = None
    if folder is not None:
        terminate = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        terminate.load_cert_chain(folder / "identity.pem")
        terminate.set_alpn_protocols(["http/1.1"])
        tls = ProxyTls(terminate, Originate(LOOPBACK, str(folder / CA_FILE_NAME)))

    async def run() -> None:
        proxy = Proxy(ProxyConfig((LOOPBACK, upstream), tls=tls), Timeline())
        async with trio.open_nursery() as nursery:
            port = await nursery.start(proxy.serve, LOOPBACK, 0)
            print(f"listening on {LOOPBACK}:{port} ", file=sys.stderr, flush=True)
            while proxy.connections < 1 or proxy.active:
                await proxy.wait_closed_connection()
            nursery.cancel_scope.cancel()

    trio.run(run)


@contextlib.contextmanager
def direct(upstream: int) -> Iterator[int]:
    yield upstream


def proxied(upstream: int, folder: Path | None) -> contextlib.AbstractContextManager[int]:
    argv = [sys.executable, "-m", "benchmarks.bench_tls", "--serve-proxy", str(upstream)]
    argv += ["--tls-folder", str(folder)] if folder is not None else []
    return running(argv, r"listening on \S+:(\d+) ")


# ---- measurements ------------------------------------------------------------------------------


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def once(
    path: PathOf, total: int, tls: ssl.SSLContext | None, client: ssl.SSLContext | None
) -> tuple[float, float]:
    """(MiB/s, CPU seconds of the proxy process) of one ``total``-byte transfer."""
    upstream, server = serve_once(total, tls)
    cpu = children_cpu_s()
    with path(upstream) as port:
        received, seconds = receive_all(port, client)
    cpu = children_cpu_s() - cpu
    server.join()
    if received != total:
        raise RuntimeError(f"received {received} of {total} bytes")
    return total / seconds / MIB, cpu


Paths = dict[str, tuple[PathOf, ssl.SSLContext | None, ssl.SSLContext | None]]


def measure(
    paths: Paths, mib: float, rounds: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Every path's MiB/s per round, and the median CPU s/GiB of its proxy process."""
    idle = {name: once(path, 0, s, c)[1] for name, (path, s, c) in paths.items()}  # warm-up too
    speeds: dict[str, list[float]] = {name: [] for name in paths}
    cpus: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, (path, s, c) in paths.items():
            mib_s, cpu_s = once(path, int(mib * MIB), s, c)
            speeds[name].append(mib_s)
            cpus[name].append(max(cpu_s - idle[name], 0.0) / (mib / 1024))
    return speeds, {name: statistics.median(values) for name, values in cpus.items()}


def report(mib: float, rounds: int) -> float:
    """Measure and print the table; return TLS's throughput as a fraction of plain's."""
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as where:
        folder = Path(where)
        ends = Ends(folder)
        server, client = ends.server(), ends.client()
        paths: Paths = {
            "direct": (direct, None, None),
            "direct-tls": (direct, server, client),
            "plain": (functools.partial(proxied, folder=None), None, None),
            "tls": (functools.partial(proxied, folder=folder), server, client),
        }
        speeds, cpus = measure(paths, mib, rounds)
    median = {name: statistics.median(values) for name, values in speeds.items()}
    print(f"one-way throughput, {mib:g} MiB, median of {rounds} interleaved rounds")
    print(f"{'path':<{WIDTH}} {'MiB/s':>8} {'x plain':>8} {'CPU s/GiB':>10}   all runs (MiB/s)")
    for name, value in median.items():
        every = " ".join(f"{v:.0f}" for v in speeds[name])
        cpu = f"{cpus[name]:>10.2f}" if name in ("plain", "tls") else f"{'-':>10}"
        print(f"{name:<{WIDTH}} {value:>8.0f} {value / median['plain']:>8.2f} {cpu}   {every}")
    ratio = median["tls"] / median["plain"]
    cpu_ratio = cpus["tls"] / cpus["plain"] if cpus["plain"] else float("inf")
    print(f"TLS on both sides: {ratio:.2f} x plain's throughput, {cpu_ratio:.1f} x its CPU per GiB")
    return ratio


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mib", type=float, default=128.0, help="MiB per transfer")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per path")
    parser.add_argument("--serve-proxy", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tls-folder", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_proxy is not None:
        serve_proxy(args.serve_proxy, args.tls_folder)
        return
    report(args.mib, args.rounds)


if __name__ == "__main__":
    main()
