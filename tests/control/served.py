"""tearline's API served by the real command in a process of its own, and what the OS says of
that process: the sockets it listens on and the descriptors it holds. Plain threads and
blocking sockets, as the test suites that use the API are (pytest-xdist workers, Testcontainers
clients): many clients at once, each with its own keep-alive connection.

Nothing here waits on time for synchronisation: a client's call returns when the server has
answered, and the server answers a delete, a disable or a move only once the listener and
every connection of that proxy are closed, so what the OS shows right after an answer is the
state the answer claims. Every wait has a bound (``TIMEOUT_S``) that only a broken server hits.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

LOOPBACK = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[2]
#: the bound on every wait: a call, a start, a probe's read (only a broken server reaches it)
TIMEOUT_S = 30.0
T = TypeVar("T")


@dataclass
class Served:
    """``tearline proxy --api 127.0.0.1:0`` running; its port, its process, its log lines."""

    process: subprocess.Popen[bytes]
    port: int
    log: list[str] = field(default_factory=list)

    @property
    def info(self) -> psutil.Process:
        return psutil.Process(self.process.pid)

    def listening(self) -> set[int]:
        """The ports the process listens on, the API's own left out."""
        return {
            c.laddr.port
            for c in self.info.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port != self.port
        }

    def descriptors(self) -> int:
        return self.info.num_fds()

    def problems(self) -> list[str]:
        """Log lines that say the server itself went wrong."""
        return [line for line in self.log if "internal error" in line or "Traceback" in line]


@contextlib.contextmanager
def served(*extra: str) -> Iterator[Served]:
    command = [sys.executable, "-m", "harness.cli", "proxy", "--api", f"{LOOPBACK}:0", *extra]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE)
    lines: queue.Queue[str | None] = queue.Queue()
    log: list[str] = []

    def drain() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            log.append(line)
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        port = _announced_port(lines)
        yield Served(process, port, log)
    finally:
        process.terminate()
        try:
            process.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(TIMEOUT_S)
        reader.join(TIMEOUT_S)


def _announced_port(lines: queue.Queue[str | None]) -> int:
    marker = f"Toxiproxy API on http://{LOOPBACK}:"
    while True:
        line = lines.get(timeout=TIMEOUT_S)
        if line is None:
            raise RuntimeError("the API server exited before it listened")
        if marker in line:
            return int(line.split(marker, 1)[1].split(",", 1)[0])


class Client:
    """One test worker's connection to the API (keep-alive, as the clients keep it)."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection(LOOPBACK, port, timeout=TIMEOUT_S)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """The status and the JSON of the answer (None when it has no body)."""
        raw = None if body is None else json.dumps(body).encode()
        self.connection.request(method, path, body=raw)
        response = self.connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None

    def close(self) -> None:
        self.connection.close()


@contextlib.contextmanager
def clients(api: Served, count: int) -> Iterator[list[Client]]:
    """``count`` clients, each connected (its first call answered, so the server holds its
    connection before anyone counts descriptors)."""
    made = [Client(api.port) for _ in range(count)]
    try:
        for client in made:
            assert client.call("GET", "/version")[0] == 200
        yield made
    finally:
        for client in made:
            client.close()


def at_once(work: Sequence[Callable[[], T]]) -> list[T]:
    """Each function in a thread of its own, all released together; their results in order
    (a thread's exception is raised here)."""
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(TIMEOUT_S)
            results[index] = work[index]()
        except BaseException as err:  # handed to the caller below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S * 2)
    if errors:
        raise errors[0]
    assert not any(thread.is_alive() for thread in threads), "a client never got its answer"
    return results


# -- the upstream, and connections through a proxy ----------------------------------------------
@contextlib.contextmanager
def echo_server() -> Iterator[int]:
    """An echo service in threads of this process; its port."""
    listener = socket.create_server((LOOPBACK, 0))
    stop = threading.Event()

    def serve(sock: socket.socket) -> None:
        with sock, contextlib.suppress(OSError):
            while data := sock.recv(65536):
                sock.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(sock,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()


class Probe:
    """A connection through a proxy, kept open across calls to the API."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection((LOOPBACK, port), TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client = "{}:{}".format(*self.sock.getsockname()[:2])

    def ping(self) -> bytes:
        """Send ``ping`` and read the echo back (what arrives before the bound)."""
        self.sock.sendall(b"ping")
        got = b""
        while len(got) < 4:
            more = self.sock.recv(4 - len(got))
            if not more:
                break
            got += more
        return got

    def ended(self) -> bool:
        """Whether the proxy closed this connection (EOF or reset, seen within the bound)."""
        try:
            return self.sock.recv(100) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


def refused(port: int, api: Served) -> bool:
    """Whether the server refuses a connection to ``port`` on the loopback: refused, or taken
    by some other process of this shared machine meanwhile (the port is free again, and the
    server does not listen on it)."""
    try:
        socket.create_connection((LOOPBACK, port), TIMEOUT_S).close()
    except ConnectionRefusedError:
        return True
    return port not in api.listening()
