"""Soak: does ``tearline proxy`` stay flat for days? RSS and open descriptors, start to end.

Run with ``python -m benchmarks.bench_proxy_soak`` (``--short 2000 --big 2 --big-mib 64``
for a quick look). Two parts, each against the real command in its own process:

(a) API soak (issue #13): ``tearline proxy --api``; ``--clients`` threads open ``--api-conns``
short connections in all (1 KiB echoed each) while another thread adds and removes toxics
every ``--churn-ms`` ms (latency, bandwidth, slicer, noop: none drops a byte). Every echo is
checked. The same run against the real toxiproxy-server gives the baseline. Printed: RSS and
open descriptors of the server at the start and the end, errors, toxic changes.

(b) Standalone soak (issue #10): ``tearline proxy --listen --upstream`` with no API;
``--short`` short connections (``--rounds`` x 1 KiB each), then ``--big`` connections of
``--big-mib`` MiB each. RSS at the start, the middle (after the short ones) and the end; the
goal is the end within 10 MiB of the middle.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.bench_proxy_api import (
    BLOCK,
    LOOPBACK,
    MIB,
    ROOT,
    TOXIPROXY,
    blaster,
    echo,
    free_port,
    serve_forever,
    wait_port,
)

PAYLOAD = bytes(range(256)) * 4  # 1 KiB


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.contextmanager
def process(command: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def short_connection(port: int, rounds: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), 10) as sock:
            for _ in range(rounds):
                sock.sendall(PAYLOAD)
                got = b""
                while len(got) < len(PAYLOAD):
                    more = sock.recv(len(PAYLOAD) - len(got))
                    if not more:
                        return False
                    got += more
                if got != PAYLOAD:
                    return False
        return True
    except OSError:
        return False


def run_clients(port: int, total: int, clients: int, rounds: int) -> int:
    """``total`` short connections from ``clients`` threads; how many failed."""
    counter = itertools.count()
    errors = [0]
    lock = threading.Lock()

    def work() -> None:
        while next(counter) < total:
            if not short_connection(port, rounds):
                with lock:
                    errors[0] += 1

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors[0]


TOXICS: list[dict[str, object]] = [
    {"type": "latency", "attributes": {"latency": 1}},
    {"type": "bandwidth", "attributes": {"rate": 100_000}},
    {"type": "slicer", "attributes": {"average_size": 300, "size_variation": 50}},
    {"type": "noop"},
]


def churn(port: int, every_s: float, stop: threading.Event) -> tuple[int, int]:
    """Add and remove toxics every ``every_s`` until ``stop``; (changes, failed calls)."""
    api = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
    changes = failures = 0
    for n in itertools.count():
        if stop.is_set():
            break
        toxic: dict[str, object] = {**TOXICS[n % len(TOXICS)], "name": f"t{n % 3}"}
        for method, path, body in (
            ("POST", "/proxies/soak/toxics", toxic),
            ("DELETE", f"/proxies/soak/toxics/t{n % 3}", None),
        ):
            raw = None if body is None else json.dumps(body).encode()
            api.request(method, path, body=raw, headers={"Content-Type": "application/json"})
            response = api.getresponse()
            response.read()
            changes += 1
            failures += response.status >= 300
            time.sleep(every_s)
    return changes, failures


def api_soak(kind: str, args: argparse.Namespace) -> None:
    port = free_port()
    if kind == "tearline":
        command = [sys.executable, "-m", "harness.cli", "proxy", "--api", f"{LOOPBACK}:{port}"]
    else:
        command = [str(args.toxiproxy), "-host", LOOPBACK, "-port", str(port)]
    upstream = serve_forever(echo)
    with process(command) as proc:
        wait_port(port)
        api = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
        body = {"name": "soak", "listen": f"{LOOPBACK}:0", "upstream": f"{LOOPBACK}:{upstream}"}
        api.request("POST", "/proxies", json.dumps(body).encode())
        listen = int(json.loads(api.getresponse().read())["listen"].rsplit(":", 1)[1])
        run_clients(listen, 200, args.clients, 1)  # warm up
        start_rss, start_fds = rss_mib(proc.pid), fds(proc.pid)
        stop = threading.Event()
        result: list[tuple[int, int]] = []
        churner = threading.Thread(
            target=lambda: result.append(churn(port, args.churn_ms / 1000, stop))
        )
        started = time.monotonic()
        churner.start()
        errors = run_clients(listen, args.api_conns, args.clients, 1)
        stop.set()
        churner.join()
        elapsed = time.monotonic() - started
        time.sleep(0.5)  # let the last connections close
        end_rss, end_fds = rss_mib(proc.pid), fds(proc.pid)
    changes, failed = result[0]
    print(
        f"(a) {kind:9} {args.api_conns} connections in {elapsed:.1f} s, {changes} toxic changes "
        f"({failed} refused), {errors} client errors; RSS {start_rss:.1f} -> {end_rss:.1f} MiB "
        f"({end_rss - start_rss:+.1f}), fds {start_fds} -> {end_fds}"
    )


BIG = b"BIG!"


def mixed(size: int) -> Callable[[socket.socket], None]:
    """An upstream that echoes, or sends ``size`` bytes and closes when asked with ``BIG!``."""
    send_big = blaster(size)

    def handler(sock: socket.socket) -> None:
        first = sock.recv(len(BIG))
        if first == BIG:
            send_big(sock)
            return
        with sock:
            data = first
            while data:
                sock.sendall(data)
                data = sock.recv(65536)

    return handler


def big_connection(port: int, size: int) -> bool:
    buffer = bytearray(BLOCK)
    got = 0
    with socket.create_connection((LOOPBACK, port)) as sock:
        sock.sendall(BIG)
        while read := sock.recv_into(buffer):
            got += read
    return got == size


def standalone_soak(args: argparse.Namespace) -> None:
    size = args.big_mib * MIB
    upstream = serve_forever(mixed(size))
    port = free_port()
    command = [sys.executable, "-m", "harness.cli", "proxy", "--listen", f"{LOOPBACK}:{port}"]
    command += ["--upstream", f"{LOOPBACK}:{upstream}"]
    with process(command) as proc:
        wait_port(port)
        start, start_fds = rss_mib(proc.pid), fds(proc.pid)
        began = time.monotonic()
        errors = run_clients(port, args.short, args.clients, args.rounds)
        short_s = time.monotonic() - began
        time.sleep(0.5)
        middle = rss_mib(proc.pid)
        began = time.monotonic()
        outcomes: list[bool] = []
        counter = itertools.count()

        def work() -> None:
            while next(counter) < args.big:
                outcomes.append(big_connection(port, size))

        threads = [threading.Thread(target=work) for _ in range(args.big_clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        big_s = time.monotonic() - began
        time.sleep(0.5)
        end, end_fds = rss_mib(proc.pid), fds(proc.pid)
    gib = args.big * args.big_mib / 1024
    print(
        f"(b) standalone: {args.short} short connections x {args.rounds} KiB in {short_s:.1f} s "
        f"({errors} errors); {args.big} connections x {args.big_mib} MiB ({gib:.0f} GiB) in "
        f"{big_s:.1f} s ({gib * 1024 / big_s:.0f} MiB/s, {sum(outcomes)} complete)"
    )
    print(
        f"    RSS start {start:.1f}, middle {middle:.1f}, end {end:.1f} MiB (end - middle "
        f"{end - middle:+.1f}, goal within 10); fds {start_fds} -> {end_fds}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--api-conns", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--churn-ms", type=float, default=5.0)
    parser.add_argument("--short", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--big", type=int, default=100)
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--big-clients", type=int, default=2)
    parser.add_argument("--toxiproxy", type=Path, default=TOXIPROXY)
    parser.add_argument("--skip", choices=["api", "standalone"], default=None)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.skip != "api":
        for kind in ["tearline"] + (["toxiproxy"] if args.toxiproxy.exists() else []):
            api_soak(kind, args)
    if args.skip != "standalone":
        standalone_soak(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
