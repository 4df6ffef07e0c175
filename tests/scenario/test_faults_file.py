"""A ``tearline proxy --faults`` file: its faults apply to every connection unless they say
otherwise (issue #8: they applied to connection 1 only, where the docs said every one)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import trio

from harness.cli.proxy import fault_lines
from harness.evidence.timeline import FaultRecord
from harness.scenario import ScenarioError
from harness.scenario.loader import load_faults_file
from tests.harness.conftest import LOOPBACK, PYTHON, read_all, sender, serve

DATA = bytes(range(100))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "faults.yaml"
    path.write_text(text)
    return path


def test_a_fault_without_connection_is_on_every_connection(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "faults:\n"
        "  - {kind: split, at: {offset: 300}}\n"
        "  - {kind: kill, how: rst, at: {offset: 600}, connection: 2}\n"
        "  - &one {kind: split, at: {offset: 3}, connection: 1}\n"
        "  - {<<: *one, at: {offset: 4}}\n",  # merged from a fault that names its connection
    )
    assert [fault.connection for fault in load_faults_file(path)] == [0, 2, 1, 1]


def test_the_list_is_bounded(tmp_path: Path) -> None:
    path = _write(tmp_path, "faults:\n" + "  - {kind: split, at: {offset: 1}}\n" * 101)
    with pytest.raises(ScenarioError) as caught:
        load_faults_file(path)
    assert str(caught.value) == f"{path}:2: faults: at most 100 items (got 101)"


async def _line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    while b"\n" not in buffer:
        more = await stream.receive_some()
        assert more, f"stream ended: {bytes(buffer)!r}"
        buffer += more
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


async def test_the_proxy_cuts_the_second_connection_too(tmp_path: Path) -> None:
    faults = _write(tmp_path, "faults:\n  - {kind: kill, how: rst, at: {offset: 10}}\n")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            upstream = await serve(nursery, sender(DATA))
            argv = [PYTHON, "-m", "harness.cli", "proxy", "--upstream", f"{LOOPBACK}:{upstream}"]
            argv += ["--faults", str(faults), "--max-connections", "2"]
            process = await trio.lowlevel.open_process(argv, stderr=subprocess.PIPE)
            assert process.stderr is not None
            buffer = bytearray()
            found = re.search(r"listening on [\d.]+:(\d+) ", await _line(process.stderr, buffer))
            assert found is not None
            ends = []
            for _ in range(2):  # one after the other: connection 1, then connection 2
                async with await trio.open_tcp_stream(LOOPBACK, int(found[1])) as consumer:
                    reads = await read_all(consumer)
                ends.append((b"".join(reads.parts), reads.end))
            assert await process.wait() == 0
            while more := await process.stderr.receive_some():
                buffer += more
            nursery.cancel_scope.cancel()
    assert ends == [(DATA[:10], "rst")] * 2
    logged = buffer.decode().splitlines()
    assert [line for line in logged if "kill" in line] == [
        "[tearline proxy] connection 1 downstream: kill at byte 10: rst",
        "[tearline proxy] connection 2 downstream: kill at byte 10: rst",
    ]


def test_the_proxy_logs_a_run_of_the_same_fault_once() -> None:
    """Issue #8: a slice logged one line per piece (68 lines for 1000 bytes)."""
    pieces = [
        FaultRecord(0.0, 1, "downstream", "slice", at, "read boundary") for at in (14, 30, 44)
    ]
    kill = FaultRecord(0.0, 1, "downstream", "kill", 45, "rst")
    other = FaultRecord(0.0, 2, "downstream", "slice", 9, "read boundary")
    assert fault_lines([*pieces, kill, other]) == [
        "connection 1 downstream: slice 3 times, at bytes 14 to 44: read boundary",
        "connection 1 downstream: kill at byte 45: rst",
        "connection 2 downstream: slice at byte 9: read boundary",
    ]
