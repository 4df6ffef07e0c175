"""Hostile services: misbehaving producers over every framing, through ``tearline run``,
``tearline proxy --framing`` and ``tearline record``.

Each attack is a small service (a thread per connection, loopback only, bounded in bytes and
time) that answers the way broken services do: garbage instead of HTTP, silence, a reset, a
line or a frame larger than any limit, a flood of tiny events, a chunk size of 2^64-1, a head
a byte at a time, a length prefix of 2^32-1, a WebSocket frame of 2^63-1 bytes, endless
fragments, a SETTINGS flood. Every tool runs as its own process; per attack and tool the
benchmark prints the exit status, whether a traceback was printed, whether it outlived its
deadline (a hang), its peak RSS (``wait4``'s ``ru_maxrss``) against the same tool's idle
baseline (a clean service of the same framing), and the diagnosis it printed.

Goals: no tracebacks, no hangs, every peak within 64 MiB of its baseline, every diagnosis
naming the attack's cause (checked against words each attack must bring up).

    python -m benchmarks.bench_hostile [--only NAME ...] [--seed N]

The attacks' sizes are fixed (above the decoders' 16 MiB limit, below a few hundred MiB of
traffic each); the seed draws the garbage's bytes and the order the attacks run in.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

TEARLINE = [sys.executable, "-m", "harness.cli"]
DEADLINE_S = 6.0  # each case's deadline (run, record) and the proxy's client's patience
SLACK_S = 20.0  # a process still running this long past its deadline hangs
GOAL_MIB = 64
HUGE = 48 << 20  # one message's bytes: well above the 16 MiB decoders' limit
FLOOD = 200_000  # tiny events of a flood
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
CHUNKED = SSE_HEAD + b"transfer-encoding: chunked\r\n\r\n"
WS_HEAD = (
    b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
    b"sec-websocket-accept: {accept}\r\n\r\n"
)

Send = Callable[[socket.socket, bytes], None]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _pieces(total: int, piece: bytes) -> Iterator[bytes]:
    for _ in range(total // len(piece)):
        yield piece


def _ws_accept(request: bytes) -> bytes:
    import base64  # noqa: PLC0415
    import hashlib  # noqa: PLC0415

    key = b""
    for line in request.split(b"\r\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            key = line.split(b":", 1)[1].strip()
    magic = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    return base64.b64encode(hashlib.sha1(key + magic).digest())


def _ws_frame(payload: bytes, *, fin: bool = True, opcode: int = 2) -> bytes:
    first = (0x80 if fin else 0) | opcode
    size = len(payload)
    if size < 126:
        return bytes([first, size]) + payload
    if size < 1 << 16:
        return bytes([first, 126]) + struct.pack(">H", size) + payload
    return bytes([first, 127]) + struct.pack(">Q", size) + payload


def _grpc_settings_flood(conn: socket.socket, request: bytes) -> None:
    frame = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame
    for _ in range(20):
        conn.sendall(frame * 5000)


def _stall(conn: socket.socket) -> None:
    conn.settimeout(DEADLINE_S + SLACK_S)
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


@dataclass(frozen=True)
class Attack:
    name: str
    framing: str
    #: what the service does with a connection, given the request's first bytes
    serve: Callable[[socket.socket, bytes], None]
    #: a word each tool's diagnosis must hold (lowercase), to name the cause
    cause: tuple[str, ...]


def _send_then_stall(
    data: Callable[[bytes], Iterator[bytes]],
) -> Callable[[socket.socket, bytes], None]:
    def serve(conn: socket.socket, request: bytes) -> None:
        for piece in data(request):
            conn.sendall(piece)
        _stall(conn)

    return serve


def _send_then_close(
    data: Callable[[bytes], Iterator[bytes]],
) -> Callable[[socket.socket, bytes], None]:
    def serve(conn: socket.socket, request: bytes) -> None:
        for piece in data(request):
            conn.sendall(piece)
        conn.close()

    return serve


def _reset(conn: socket.socket, request: bytes) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _slow_head(conn: socket.socket, request: bytes) -> None:
    for byte in SSE_HEAD[: int(DEADLINE_S) + 4]:  # a byte a second, past the deadline
        conn.sendall(bytes([byte]))
        time.sleep(1.0)
    conn.close()


def attacks(rng: random.Random) -> list[Attack]:
    garbage = bytes(rng.randrange(33, 127) for _ in range(30)) + b"\r\n\r\n"
    x = b"x" * (1 << 20)

    def huge_sse(_: bytes) -> Iterator[bytes]:
        yield CHUNKED
        yield _chunk(b"data: ")
        for piece in _pieces(HUGE, x):
            yield _chunk(piece)

    def flood_sse(_: bytes) -> Iterator[bytes]:
        yield CHUNKED
        event = _chunk(b"data: t\n\n")
        for _round in range(FLOOD // 1000):
            yield event * 1000
        yield b"0\r\n\r\n"

    def chunk_max(_: bytes) -> Iterator[bytes]:
        yield CHUNKED + b"ffffffffffffffff\r\n"
        for _round in range(100):
            yield b"data: in the chunk\n\n" * 100

    def huge_ndjson(_: bytes) -> Iterator[bytes]:
        yield b'{"a":"'
        yield from _pieces(HUGE, x)

    def prefix_max(_: bytes) -> Iterator[bytes]:
        yield b"\xff\xff\xff\xff"
        yield from _pieces(HUGE, x)

    def ws_huge(request: bytes) -> Iterator[bytes]:
        yield WS_HEAD.replace(b"{accept}", _ws_accept(request))
        yield b"\x82\x7f" + struct.pack(">Q", (1 << 63) - 1)
        yield from _pieces(HUGE, x)

    def ws_fragments(request: bytes) -> Iterator[bytes]:
        yield WS_HEAD.replace(b"{accept}", _ws_accept(request))
        yield _ws_frame(x[:4096], fin=False)
        fragment = _ws_frame(x[:4096], fin=False, opcode=0)
        for _ in range(HUGE // (4096 * 256)):
            yield fragment * 256

    def grpc_garbage(_: bytes) -> Iterator[bytes]:
        yield garbage

    return [
        Attack("garbage", "sse", _send_then_close(lambda _: iter([garbage])), ("status line",)),
        Attack("silent", "sse", lambda c, r: _stall(c), ("no verdict", "nothing", "before a byte")),
        Attack("reset", "sse", _reset, ("reset",)),
        Attack("slow-head", "sse", _slow_head, ("deadline", "no verdict", "nothing", "head")),
        Attack("sse-200MB-line", "sse", _send_then_stall(huge_sse), ("limit",)),
        Attack("sse-flood", "sse", _send_then_close(flood_sse), ("complete", "accepted")),
        Attack("chunk-2^64-1", "sse", _send_then_stall(chunk_max), ("chunk",)),
        Attack("ndjson-huge-line", "ndjson", _send_then_stall(huge_ndjson), ("limit",)),
        Attack("prefix-2^32-1", "length-prefixed", _send_then_stall(prefix_max), ("limit",)),
        Attack("ws-2^63-1", "websocket", _send_then_stall(ws_huge), ("limit",)),
        Attack("ws-fragments", "websocket", _send_then_stall(ws_fragments), ("limit",)),
        Attack("grpc-garbage", "grpc", _send_then_close(grpc_garbage), ("http/2", "grpc")),
        Attack("grpc-settings-flood", "grpc", _grpc_settings_flood, ("flood",)),
    ]


class Service:
    """One attack on a loopback port: a thread per connection, each closed when done."""

    def __init__(self, serve: Callable[[socket.socket, bytes], None]) -> None:
        self._serve = serve
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.sock.settimeout(0.5)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(DEADLINE_S + SLACK_S)
        try:
            request = conn.recv(65536)
            self._serve(conn, request)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@dataclass
class Ran:
    code: int | None  # None: killed as a hang
    seconds: float
    peak_mib: float
    output: str

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.output


def _spawn(argv: list[str], limit_s: float, client: Callable[[], None] | None = None) -> Ran:
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        env = {**os.environ, "COLUMNS": "1000"}  # tearline run's table, one line a case
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        if client is not None:
            client()
        code: int | None = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > limit_s:
                proc.kill()
                _, _, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = code if code is not None else -9  # (reaped by wait4 above)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return Ran(code, time.monotonic() - started, usage.ru_maxrss / 1024, text)


SCENARIO = """name: hostile
description: a hostile service behind the link
link: {{framing: {framing}, payload: messages}}
faults: [{{kind: split, at: {{frame: 2}}}}]
expect: {{complete: true}}
deadline_ms: {deadline_ms}
"""
FAULTS = "faults: [{kind: split, at: {frame: 2}}]\n"


def run_tool(tool: str, attack: Attack, port: int, work: Path) -> Ran:
    upstream = f"127.0.0.1:{port}"
    limit = DEADLINE_S + SLACK_S
    if tool == "run":
        scenario = work / f"{attack.framing}.yaml"
        deadline = int(DEADLINE_S * 1000)
        scenario.write_text(SCENARIO.format(framing=attack.framing, deadline_ms=deadline))
        argv = [*TEARLINE, "run", "--upstream", upstream, str(scenario)]
        return _spawn(argv, limit)
    if tool == "record":
        argv = [
            *TEARLINE, "record", "--upstream", upstream, "--framing", attack.framing,
            "--payload", "messages", "--deadline-ms", str(int(DEADLINE_S * 1000)),
            "-o", str(work / "out.tlrec"),
        ]  # fmt: skip
        return _spawn(argv, limit)
    faults = work / "faults.yaml"
    faults.write_text(FAULTS)
    listen = _free_port()
    argv = [
        *TEARLINE, "proxy", "--upstream", upstream, "--framing", attack.framing,
        "--faults", str(faults), "--listen", f"127.0.0.1:{listen}", "--max-connections", "1",
        "--idle-after-end-s", "2",
    ]  # fmt: skip
    return _spawn(argv, limit, lambda: _client(listen, attack.framing))


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port


def _client(port: int, framing: str) -> None:
    """A client that asks, reads what comes for at most ``DEADLINE_S``, and leaves."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
    request = {
        "websocket": b"GET /stream HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: "
        b"upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: "
        b"13\r\n\r\n",
        "grpc": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
        "length-prefixed": b"",
        "ndjson": b"",
    }.get(framing, b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
    with sock:
        try:
            sock.sendall(request)
            while time.monotonic() < deadline:
                sock.settimeout(max(0.05, deadline - time.monotonic()))
                if not sock.recv(1 << 20):
                    return
        except OSError:
            return


def _clean(framing: str) -> Callable[[socket.socket, bytes], None]:
    """A well-behaved service: three messages and the framing's end (the idle baseline)."""

    def data(request: bytes) -> Iterator[bytes]:
        if framing == "sse":
            yield CHUNKED + b"".join(_chunk(b"data: m%d\n\n" % i) for i in range(3))
            yield b"0\r\n\r\n"
        elif framing == "ndjson":
            yield b'{"m":1}\n{"m":2}\n{"m":3}\n'
        elif framing == "length-prefixed":
            yield b"".join(struct.pack(">I", 2) + b"m%d" % i for i in range(3))
        elif framing == "websocket":
            yield WS_HEAD.replace(b"{accept}", _ws_accept(request))
            yield b"".join(_ws_frame(b"m%d" % i, opcode=1) for i in range(3)) + b"\x88\x02\x03\xe8"
        else:
            yield b""

    return _send_then_close(data)


def diagnosis(ran: Ran) -> str:
    lines = [line for line in ran.output.splitlines() if line.strip()]
    rows = [line for line in lines if "::hostile" in line and line.startswith("\u2502")]
    if rows:  # tearline run's table: outcome and diagnosis of the case
        cells = [cell.strip() for cell in rows[0].strip("\u2502").split("\u2502")]
        return f"{cells[0]}: {cells[-1]}"[:300]
    if "1 cases in" in ran.output and "pass" in ran.output and not rows:
        return "pass"
    useful = [
        line
        for line in lines
        if not line.startswith("[tearline proxy] listening") and "connection 1: open" not in line
    ]
    return " | ".join(useful[-3:])[:300]


def _row(name: str, tool: str, ran: Ran, over: float, named: bool, told: str) -> str:
    code = "kill" if ran.code is None else str(ran.code)
    marks = f"{'yes' if ran.traceback else 'no':>3} {'yes' if ran.code is None else 'no':>4}"
    figures = f"{ran.seconds:5.1f} {ran.peak_mib:6.0f} {over:+6.0f}"
    return (
        f"{name:<20} {tool:<7} {code:>4} {marks} {figures}  {'yes' if named else 'NO':<5}  {told}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="attack names")
    parser.add_argument("--tools", nargs="*", default=["run", "proxy", "record"])
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    print(f"seed {args.seed}; deadline {DEADLINE_S:g} s; goals: 0 tracebacks, 0 hangs, "
          f"peak within {GOAL_MIB} MiB of the idle baseline, the cause named")  # fmt: skip
    chosen = [a for a in attacks(rng) if args.only is None or a.name in args.only]
    rng.shuffle(chosen)
    baselines: dict[tuple[str, str], float] = {}
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for framing in sorted({a.framing for a in chosen} - {"grpc"}) + ["grpc"] * any(
            a.framing == "grpc" for a in chosen
        ):
            service = Service(_clean(framing))
            for tool in args.tools:
                baselines[(tool, framing)] = run_tool(
                    tool, Attack("clean", framing, _clean(framing), ()), service.port, work
                ).peak_mib
            service.close()
        print(f"{'attack':<20} {'tool':<7} {'exit':>4} {'tb':>3} {'hang':>4} {'s':>5} "
              f"{'peak':>6} {'+idle':>6}  named  diagnosis")  # fmt: skip
        for attack in chosen:
            service = Service(attack.serve)
            for tool in args.tools:
                ran = run_tool(tool, attack, service.port, work)
                base = baselines.get((tool, attack.framing), ran.peak_mib)
                told = diagnosis(ran)
                named = any(word in told.lower() for word in attack.cause)
                over = ran.peak_mib - base
                bad = ran.traceback or ran.code is None or over > GOAL_MIB or not named
                failures += bad
                print(_row(attack.name, tool, ran, over, named, told), flush=True)
            service.close()
    print(f"{failures} of {len(chosen) * len(args.tools)} runs miss a goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
