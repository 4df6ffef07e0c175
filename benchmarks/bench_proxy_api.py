"""tearline's Toxiproxy API next to the real toxiproxy-server, in the same run.

Run with ``python -m benchmarks.bench_proxy_api`` (``--mib 64 --rounds 1`` for a quick look).
Both servers run as their own processes on loopback; the same client drives both, in
interleaved rounds, and the table gives medians and tearline / Toxiproxy ratios:

- ``api call``: one toxic added, updated and deleted over a keep-alive HTTP connection (the
  time of one call).
- ``throughput, no toxic`` and ``throughput, latency 0``: the upstream sends ``--mib`` MiB and
  closes; the client reads to EOF (MiB/s). A toxic of 0 ms makes tearline run its chain of
  stages instead of its copy loop.
- ``latency 50 ms``: a 100-byte ping-pong through a ``latency`` toxic of 50 ms (median round
  trip, and how far it is from 50 ms).
- ``create`` and ``delete N proxies``: ``--proxies`` proxies created one after another over
  one keep-alive connection (``listen 127.0.0.1:0``), then deleted (what a test suite's setup
  and teardown pay).
- ``body of M MiB``: a proxy created with a ``--body-mib`` MiB body (a long string member
  Toxiproxy ignores) and one of 4 MiB: the time to the answer. tearline answers the first 413
  (over its bound, 8 MiB) and creates the second; Toxiproxy reads and decodes both.
- ``after removal``: on one connection with a 10 ms ``latency`` toxic, the toxic is removed and
  the next round trip timed (the median of ``--trips`` removals), next to the same
  connection's pass-through round trip before the toxic.

With ``--load N``, N processes spinning on the CPUs (20 is ten times this machine's cores) run
while the latency rows are measured again: how late each of 1, 10, 50 and 100 ms comes, and
the round trip after a removal, on a loaded machine.

The real server is ``../shared/anchors/toxiproxy/toxiproxy-server`` (``--toxiproxy PATH``);
without it only tearline's column is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

MIB = 1024 * 1024
BLOCK = 4 * MIB
LOOPBACK = "127.0.0.1"
BANDWIDTH_KB = 2000  # the bandwidth toxic's rate
BANDWIDTH_BYTES = 1_000_000  # sent through it: half a second at that rate
ROOT = Path(__file__).resolve().parents[1]
TOXIPROXY = ROOT.parent / "shared" / "anchors" / "toxiproxy" / "toxiproxy-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


@contextlib.contextmanager
def server(kind: str, toxiproxy: Path) -> Iterator[int]:
    """``serving``'s API port alone."""
    with serving(kind, toxiproxy) as (_, port):
        yield port


@contextlib.contextmanager
def serving(kind: str, toxiproxy: Path) -> Iterator[tuple[int, int]]:
    """``tearline proxy --api`` or ``toxiproxy-server`` in its own process, for the block:
    (its pid, its API port)."""
    port = free_port()
    if kind == "tearline":
        command = [sys.executable, "-m", "harness.cli", "proxy", "--api", f"{LOOPBACK}:{port}"]
    else:
        command = [str(toxiproxy), "-host", LOOPBACK, "-port", str(port)]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_port(port)
        yield process.pid, port
    finally:
        process.terminate()
        process.wait(10)


class Api:
    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection(LOOPBACK, port, timeout=30)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        raw = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        self.connection.request(method, path, body=raw, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()


# -- upstreams (threads in this process) -----------------------------------------------------
def serve_forever(handler: Callable[[socket.socket], None]) -> int:
    listener = socket.create_server((LOOPBACK, 0))
    port = int(listener.getsockname()[1])

    def loop() -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=handler, args=(client,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return port


def echo(sock: socket.socket) -> None:
    with sock:
        while data := sock.recv(65536):
            sock.sendall(data)


def blaster(size: int) -> Callable[[socket.socket], None]:
    block = bytes(BLOCK)

    def handler(sock: socket.socket) -> None:
        with sock:
            left = size
            while left > 0:
                sent = sock.send(memoryview(block)[: min(left, BLOCK)])
                left -= sent

    return handler


# -- measurements ----------------------------------------------------------------------------
def api_call_s(api: Api, proxy: str, calls: int) -> float:
    times: list[float] = []
    for n in range(calls):
        toxic = {"name": f"t{n}", "type": "latency", "attributes": {"latency": 1}}
        for method, path, body in (
            ("POST", f"/proxies/{proxy}/toxics", toxic),
            ("POST", f"/proxies/{proxy}/toxics/t{n}", {"attributes": {"latency": 2}}),
            ("DELETE", f"/proxies/{proxy}/toxics/t{n}", None),
        ):
            started = time.perf_counter()
            status, _ = api.call(method, path, body)
            times.append(time.perf_counter() - started)
            assert status < 300, status
    return statistics.median(times)


def throughput(port: int, size: int) -> float:
    buffer = bytearray(BLOCK)
    started = time.perf_counter()
    got = 0
    with socket.create_connection((LOOPBACK, port)) as sock:
        while read := sock.recv_into(buffer):
            got += read
    assert got == size, (got, size)
    return size / MIB / (time.perf_counter() - started)


def round_trip_s(port: int, trips: int) -> float:
    times = []
    with socket.create_connection((LOOPBACK, port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(trips):
            started = time.perf_counter()
            sock.sendall(bytes(100))
            got = 0
            while got < 100:
                got += len(sock.recv(100 - got))
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def create_delete_s(api: Api, count: int, upstream: int) -> tuple[float, float]:
    """The time to create ``count`` proxies one after another, and to delete them."""
    body = {"listen": f"{LOOPBACK}:0", "upstream": f"{LOOPBACK}:{upstream}"}
    started = time.perf_counter()
    for n in range(count):
        status, raw = api.call("POST", "/proxies", {**body, "name": f"many{n}"})
        assert status == 201, raw
    created = time.perf_counter()
    for n in range(count):
        assert api.call("DELETE", f"/proxies/many{n}")[0] == 204
    return created - started, time.perf_counter() - created


def body_s(api: Api, mib: int, upstream: int) -> tuple[float, int]:
    """The time to the answer to a create whose body is ``mib`` MiB, and its status."""
    body = {"name": "big", "listen": f"{LOOPBACK}:0", "upstream": f"{LOOPBACK}:{upstream}"}
    raw = json.dumps({**body, "padding": "x" * (mib * MIB)}).encode()
    started = time.perf_counter()
    api.connection.request("POST", "/proxies", body=raw)
    response = response_of(api)
    took = time.perf_counter() - started
    if response < 300:
        api.call("DELETE", "/proxies/big")
    return took, response


def response_of(api: Api) -> int:
    response = api.connection.getresponse()
    response.read()
    if response.will_close:
        api.connection.close()
    return response.status


def after_removal_s(api: Api, name: str, port: int, trips: int) -> tuple[float, float]:
    """On one connection: the pass-through round trip, and the first one after a 10 ms
    latency toxic was removed (medians over ``trips`` removals)."""
    plain, after = [], []
    toxic = {"name": "gone", "type": "latency", "attributes": {"latency": 10}}
    with socket.create_connection((LOOPBACK, port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(trips):
            plain.append(ping(sock))
            api.call("POST", f"/proxies/{name}/toxics", toxic)
            ping(sock)
            api.call("DELETE", f"/proxies/{name}/toxics/gone")
            after.append(ping(sock))
    return statistics.median(plain), statistics.median(after)


def ping(sock: socket.socket) -> float:
    started = time.perf_counter()
    sock.sendall(bytes(100))
    got = 0
    while got < 100:
        got += len(sock.recv(100 - got))
    return time.perf_counter() - started


def proxy(api: Api, name: str, upstream: int) -> int:
    body = {"name": name, "listen": f"{LOOPBACK}:0", "upstream": f"{LOOPBACK}:{upstream}"}
    status, raw = api.call("POST", "/proxies", body)
    assert status == 201, raw
    return int(json.loads(raw)["listen"].rsplit(":", 1)[1])


def measure(kind: str, toxiproxy: Path, args: argparse.Namespace) -> dict[str, float]:
    size = args.mib * MIB
    with server(kind, toxiproxy) as port:
        api = Api(port)
        results: dict[str, float] = {}
        blast = serve_forever(blaster(size))
        echoes = serve_forever(echo)
        plain = proxy(api, "plain", blast)
        slow = proxy(api, "slow", blast)
        api.call("POST", "/proxies/slow/toxics", {"type": "latency", "attributes": {"latency": 0}})
        paced = proxy(api, "paced", serve_forever(blaster(BANDWIDTH_BYTES)))
        rate = {"type": "bandwidth", "attributes": {"rate": BANDWIDTH_KB}}
        api.call("POST", "/proxies/paced/toxics", rate)
        late = proxy(api, "late", echoes)
        api.call("POST", "/proxies/late/toxics", {"type": "latency", "attributes": {"latency": 50}})
        results["api call (ms)"] = api_call_s(api, "plain", args.calls) * 1000
        results["throughput, no toxic (MiB/s)"] = throughput(plain, size)
        results["throughput, latency 0 (MiB/s)"] = throughput(slow, size)
        results["latency 50 ms: round trip (ms)"] = round_trip_s(late, args.trips) * 1000
        bandwidth = throughput(paced, BANDWIDTH_BYTES) * MIB / 1000
        results[f"bandwidth {BANDWIDTH_KB} KB/s: got (KB/s)"] = bandwidth
        made, gone = create_delete_s(api, args.proxies, echoes)
        results[f"create {args.proxies} proxies (s)"] = made
        results[f"delete {args.proxies} proxies (s)"] = gone
        for mib in (args.body_mib, 4):
            took, status = body_s(api, mib, echoes)
            results[f"body of {mib} MiB: answer (ms)"] = took * 1000
            results[f"body of {mib} MiB: status"] = status
        removal = proxy(api, "removal", echoes)
        before, after = after_removal_s(api, "removal", removal, args.trips)
        results["pass-through round trip (ms)"] = before * 1000
        results["round trip after removal (ms)"] = after * 1000
        if args.load:
            results.update(loaded(api, echoes, args))
        return results


def loaded(api: Api, echoes: int, args: argparse.Namespace) -> dict[str, float]:
    """The latency rows again while ``args.load`` processes spin on the CPUs."""
    results: dict[str, float] = {}
    spin = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(spin) for _ in range(args.load)]
    try:
        for delay in (1, 10, 50, 100):
            port = proxy(api, f"load{delay}", echoes)
            late = {"type": "latency", "attributes": {"latency": delay}}
            api.call("POST", f"/proxies/load{delay}/toxics", late)
            got = round_trip_s(port, args.trips) * 1000
            results[f"loaded: latency {delay} ms, late by (ms)"] = got - delay
        port = proxy(api, "loaded_removal", echoes)
        before, after = after_removal_s(api, "loaded_removal", port, args.trips)
        results["loaded: pass-through round trip (ms)"] = before * 1000
        results["loaded: round trip after removal (ms)"] = after * 1000
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--trips", type=int, default=20)
    parser.add_argument("--proxies", type=int, default=2000)
    parser.add_argument("--body-mib", type=int, default=50)
    parser.add_argument("--load", type=int, default=0, metavar="N")
    parser.add_argument("--toxiproxy", type=Path, default=TOXIPROXY)
    args = parser.parse_args()
    kinds = ["tearline"] + (["toxiproxy"] if args.toxiproxy.exists() else [])
    rows: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for kind in kinds:
            for name, value in measure(kind, args.toxiproxy, args).items():
                rows.setdefault(name, {}).setdefault(kind, []).append(value)
    load = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"{args.mib} MiB, {args.rounds} round(s), medians"
    )
    print(f"{'':34} {'tearline':>10} {'toxiproxy':>10} {'ratio':>7}")
    for name, by_kind in rows.items():
        ours = statistics.median(by_kind["tearline"])
        theirs = statistics.median(by_kind["toxiproxy"]) if "toxiproxy" in by_kind else None
        ratio = f"{ours / theirs:7.2f}" if theirs else "      -"
        other = f"{theirs:10.2f}" if theirs is not None else "         -"
        print(f"{name:34} {ours:10.2f} {other} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
