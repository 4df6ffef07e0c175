"""``tearline record`` as a user runs it: against ``tearline produce``, with the reference
consumer or a consumer program, and refusing an unreachable producer in one line."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.utils import rdpcap

from harness.record.format import read_recording

TEARLINE = [sys.executable, "-m", "harness.cli"]
#: a safety net against a hung child, never a synchronisation
TIMEOUT_S = 60


@pytest.fixture
def producer() -> Iterator[str]:
    """``tearline produce`` on a port of the OS's choosing; its HOST:PORT."""
    process = subprocess.Popen(
        [*TEARLINE, "produce", "--framing", "sse", "--payload", "tokens", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # "serving tokens over sse on 127.0.0.1:PORT"
        yield line.split()[-1]
    finally:
        process.kill()
        process.wait(TIMEOUT_S)


def _record(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TEARLINE, "record", *args], check=False, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_record_writes_a_recording_and_a_pcap(producer: str, tmp_path: Path) -> None:
    out, pcap = tmp_path / "sse.tlrec", tmp_path / "sse.pcap"
    done = _record(
        "--upstream", producer, "--framing", "sse", "--payload", "tokens",
        "-o", str(out), "--pcap", str(pcap),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    recording = read_recording(str(out))
    assert (recording.meta.framing, recording.meta.payload) == ("sse", "tokens")
    assert recording.meta.upstream == producer
    assert recording.meta.consumer is None
    assert recording.sent("consumer").startswith(b"GET ")
    assert recording.end_of("producer") is not None
    assert len(rdpcap(str(pcap))) > 3
    assert not (tmp_path / "sse.tlrec.partial").exists()


def test_record_with_a_consumer_program(producer: str, tmp_path: Path) -> None:
    out = tmp_path / "sse.tlrec"
    consumer = (
        f"{sys.executable} -m harness.cli consume --connect {{host}}:{{port}}"
        " --framing sse --payload tokens --json"
    )
    done = _record(
        "--upstream", producer, "--framing", "sse", "--payload", "tokens",
        "--consumer", consumer, "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    recording = read_recording(str(out))
    assert recording.meta.consumer is not None
    assert recording.meta.consumer[-1] == "--json"
    assert recording.sent("producer").startswith(b"HTTP/1.1 200")


def test_record_with_a_consumer_function(producer: str, tmp_path: Path) -> None:
    out = tmp_path / "sse.tlrec"
    done = _record(
        "--upstream", producer, "--framing", "sse", "--payload", "tokens",
        "--consumer-function", "tests.consumers.functions:codec_consumer", "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    recording = read_recording(str(out))
    assert recording.sent("consumer").startswith(b"GET ")
    assert recording.sent("producer").startswith(b"HTTP/1.1 200")
    assert done.stdout.endswith(
        "producer end eof; consumer verdict COMPLETE (complete=True, 42 accepted: returned "
        "normally after 42 message(s))\n"
    )


def test_a_consumer_function_that_cannot_be_found_is_one_line(tmp_path: Path) -> None:
    done = _record(
        "--upstream", "127.0.0.1:9", "--framing", "sse", "--consumer-function", "no_such_x:f",
        "-o", str(tmp_path / "x.tlrec"),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == ("tearline record: --consumer-function: no module named 'no_such_x'\n")


def test_an_unreachable_producer_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as bound:  # bound, never listening: connections are refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        done = _record(
            "--upstream", f"127.0.0.1:{port}", "--framing", "sse", "-o", str(tmp_path / "x")
        )
    assert done.returncode == 2
    assert done.stderr.startswith("tearline record: ")
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "x").exists()
