"""The pytest fixtures: the fault proxy in front of a service, the library against a function."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.errors import SetupError
from harness.judging.results import Grade
from harness.pytest_plugin.fixtures import RunningProxy, ScenarioResults, parse_faults
from harness.scenario import ScenarioError

BODY = bytes(range(256)) * 4  # 1024 bytes
HERE = Path(__file__).parent


@pytest.fixture
def service() -> Iterator[tuple[str, int]]:
    """A TCP service that writes BODY to each connection, then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(BODY)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[:2]
    stop.set()
    listener.close()
    thread.join(5)


def _read_all(address: tuple[str, int]) -> tuple[bytes, str]:
    data = b""
    try:
        with socket.create_connection(address, timeout=10) as sock:
            while chunk := sock.recv(65536):
                data += chunk
    except ConnectionResetError:
        # (on a busy machine the proxy may write its 600 bytes and reset before the client's
        # connect() has returned: the reset then comes from connect, and with no byte read)
        return data, "rst"
    return data, "eof"


def test_the_proxy_cuts_where_it_is_told(
    tearline_proxy: Callable[..., RunningProxy], service: tuple[str, int]
) -> None:
    proxy = tearline_proxy(
        f"{service[0]}:{service[1]}", faults=[{"kind": "kill", "how": "rst", "at": {"offset": 600}}]
    )
    data, end = _read_all(proxy.address)
    assert (len(data) <= 600, end) == (True, "rst")
    assert data == BODY[: len(data)]
    assert [(c, d, n, o) for c, d, n, o, _ in proxy.fired()] == [(1, "downstream", "kill", 600)]
    assert proxy.url("/stream").endswith(f":{proxy.port}/stream")


def test_without_faults_the_proxy_is_transparent(
    tearline_proxy: Callable[..., RunningProxy], service: tuple[str, int]
) -> None:
    proxy = tearline_proxy(service)
    assert _read_all(proxy.address) == (BODY, "eof")
    assert proxy.fired() == [] and proxy.errors == []


def test_a_mistake_in_the_faults_names_the_key() -> None:
    with pytest.raises(ScenarioError, match="how"):
        parse_faults([{"kind": "kill", "how": "sideways", "at": {"offset": 1}}])
    with pytest.raises(SetupError) as caught:  # no framing: the stream has no frames
        parse_faults([{"kind": "kill", "how": "fin", "at": {"frame": 2}}])
    assert caught.value.path == ("faults", 0, "at", "frame")
    assert parse_faults([{"kind": "kill", "how": "fin", "at": {"frame": 2}}], "sse")


def test_the_library_against_a_function(tearline_scenarios: Callable[..., ScenarioResults]) -> None:
    results = tearline_scenarios(
        "tests.consumers.functions:codec_consumer", [str(HERE / "scenarios")]
    )
    assert results.failed == [], results.summary()
    assert (results.count(Grade.STRICT), results.count(Grade.NON_STRICT)) == (1, 1)


def test_a_failing_function_is_summarised(
    tearline_scenarios: Callable[..., ScenarioResults],
) -> None:
    results = tearline_scenarios(
        "tests.consumers.functions:returns_int", [str(HERE / "scenarios")], select="clean"
    )
    assert len(results.failed) == 1
    assert "consumer function returned int" in results.summary()
    assert "--consumer-function tests.consumers.functions:returns_int" in results.summary()


def test_a_broken_file_is_one_failure_and_the_others_run(
    tearline_scenarios: Callable[..., ScenarioResults], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: Bad Name\ndescription: d\nlink: {framing: sse, payload: tokens}\n")
    results = tearline_scenarios(
        "tests.consumers.functions:codec_consumer", [str(broken), str(HERE / "scenarios")]
    )
    assert (results.count(Grade.STRICT), results.count(Grade.NON_STRICT)) == (1, 1)
    assert [(r.case_id, r.outcome, r.line) for r in results.failed] == [
        (f"{broken}::(not loaded)", "error", 1)
    ]
    assert [p.key_path for p in results.refused[0].problems] == ["name", "expect"]
    assert results.summary().splitlines()[:2] == [
        "0 of 2 cases not ok; 1 scenario file(s) not run",
        f"not run: {broken}:1: name: must be lowercase letters, digits, '.', '_' or '-', "
        "starting with a letter or digit (got 'Bad Name')",
    ]
