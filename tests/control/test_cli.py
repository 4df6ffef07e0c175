"""``tearline proxy --api`` as a program: loopback only by default, one line and a clean exit on
SIGINT and SIGTERM, no traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
from functools import partial

import pytest
import trio

PROGRAM = [sys.executable, "-m", "harness.cli", "proxy"]


async def _started(process: trio.Process) -> str:
    """stderr up to the line saying where the API listens."""
    assert process.stderr is not None
    seen = b""
    with trio.fail_after(20):
        while b"Toxiproxy API on" not in seen:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, seen
            seen += chunk
    return seen.decode()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
async def test_a_signal_shuts_down_in_one_line(signum: int, code: int) -> None:
    async with trio.open_nursery() as nursery:
        command = [*PROGRAM, "--api", "127.0.0.1:0"]
        run = partial(trio.run_process, command, stderr=subprocess.PIPE, check=False)
        process: trio.Process = await nursery.start(run)
        first = await _started(process)
        process.send_signal(signum)
        assert process.stderr is not None
        rest = b""
        with trio.fail_after(20):
            while chunk := await process.stderr.receive_some(4096):
                rest += chunk
            assert await process.wait() == code
    assert "Traceback" not in first + rest.decode()
    assert rest.decode().strip().splitlines() == [
        f"[tearline proxy] {signal.Signals(signum).name}: shutting down"
    ]


@pytest.mark.parametrize("flag", ["--api", "--listen"])
async def test_a_non_loopback_address_is_refused_without_allow_remote(flag: str) -> None:
    extra = [] if flag == "--api" else ["--upstream", "127.0.0.1:1"]
    done = await trio.run_process(
        [*PROGRAM, flag, "0.0.0.0:0", *extra], capture_stderr=True, check=False
    )
    assert done.returncode == 2
    assert b"not a loopback address; pass --allow-remote" in done.stderr


async def test_an_api_port_in_use_is_one_line() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    with listener:
        done = await trio.run_process(
            [*PROGRAM, "--api", f"127.0.0.1:{port}"], capture_stderr=True, check=False
        )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"tearline proxy: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
