"""The third-party servers, started once for the folder, and a case run against one of them.

``services`` starts each server twice, plain and over TLS (a ``trustme`` CA whose file the
scenario names as ``upstream_ca``), and stops them all at the end. ``run_tapped`` runs a case
through a ``Tap`` below tearline's proxy: what the server really sent on that connection, read
back with the parsers of ``wire.py``, never with tearline's locator.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from harness.judging.results import CaseResult
from harness.running.case import run_case
from harness.scenario import Case
from tests.harness.conftest import one_case
from tests.thirdparty import servers, wire
from tests.thirdparty.servers import LOOPBACK, PATHS, AsyncioThread, Tls

#: a case never waits longer than this for its verdict (the default is 10 s)
DEADLINE_MS = 5000
#: and a test never waits longer than this for a case
CASE_TIMEOUT_S = 10


@dataclass(frozen=True, slots=True)
class Service:
    """One server, plain and over TLS, of one framing."""

    framing: str
    port: int
    tls_port: int
    tls: Tls
    parse: Callable[[bytes], wire.Parsed]

    def upstream(self, secure: bool, port: int | None = None) -> str:
        if secure:
            return f"https://{LOOPBACK}:{port or self.tls_port}"
        return f"{LOOPBACK}:{port or self.port}"

    def tap(self, secure: bool) -> wire.Tap:
        """A tap in front of the plain or the TLS server (TLS on both of its sides)."""
        if not secure:
            return wire.Tap(self.port)
        alpn = ["h2" if self.framing == "grpc" else "http/1.1"]
        connecting = ssl.create_default_context(cafile=str(self.tls.ca_file))
        connecting.set_alpn_protocols(alpn)
        return wire.Tap(self.tls_port, (self.tls.server_context(alpn), connecting))


def case_for(
    framing: str,
    upstream: str,
    *,
    faults: str = "[]",
    expect: str = "{accepted_messages: 5}",
    ca_file: Path | None = None,
) -> Case:
    """A one-case scenario of payload ``messages`` on ``framing`` against ``upstream``."""
    producer = f"upstream: {json.dumps(upstream)}"
    if ca_file is not None:
        producer += f", upstream_ca: {json.dumps(str(ca_file))}"
    path = f", framing_options: {{path: {PATHS[framing]}}}" if framing in PATHS else ""
    text = (
        "name: third-party\n"
        "description: a real server behind tearline\n"
        f"link: {{framing: {framing}, payload: messages, producer: {{{producer}}}{path}}}\n"
        f"faults: {faults}\n"
        f"expect: {expect}\n"
        f"deadline_ms: {DEADLINE_MS}\n"
    )
    return one_case(text)


async def run_against(
    service: Service, secure: bool, faults: str, expect: str, port: int | None = None
) -> CaseResult:
    """The case against the service's plain or TLS server (or a tap's ``port`` in front of
    it), the service's CA trusted."""
    ca_file = service.tls.ca_file if secure else None
    upstream = service.upstream(secure, port)
    case = case_for(service.framing, upstream, faults=faults, expect=expect, ca_file=ca_file)
    with trio.fail_after(CASE_TIMEOUT_S):
        return await run_case(case)


@dataclass(frozen=True, slots=True)
class Tapped:
    """A case's result, and what the server sent on its connection (the raw capture, read
    back by the service's parser)."""

    result: CaseResult
    capture: bytes
    sent: wire.Parsed


async def run_tapped(service: Service, secure: bool, faults: str, expect: str) -> Tapped:
    """The case through a tap in front of the server: the server's bytes of that very
    connection, captured below tearline's proxy (as plaintext over TLS)."""
    tap = service.tap(secure)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(tap.serve)
        result = await run_against(service, secure, faults, expect, port)
        nursery.cancel_scope.cancel()
    (capture,) = tap.captures
    return Tapped(result, bytes(capture), service.parse(bytes(capture)))


@pytest.fixture(scope="session")
def asyncio_thread() -> Iterator[AsyncioThread]:
    loop = AsyncioThread()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def service_tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return servers.new_tls(tmp_path_factory.mktemp("thirdparty-tls"))


@pytest.fixture(scope="session")
def services(asyncio_thread: AsyncioThread, service_tls: Tls) -> Iterator[dict[str, Service]]:
    """Every framing's server, plain and over TLS, for the whole session."""
    loop, tls = asyncio_thread, service_tls
    http = tls.server_context(["http/1.1"])
    started: list[servers.Running] = []

    def keep(server: servers.Running) -> servers.Running:
        started.append(server)
        return server

    try:
        sse = keep(servers.Uvicorn(servers.sse_app(), loop, None))
        sse_tls = keep(servers.Uvicorn(servers.sse_app(), loop, http))
        ws = keep(servers.WebSockets(loop, None))
        ws_tls = keep(servers.WebSockets(loop, http))
        lines = keep(servers.Ndjson(loop, None))
        lines_tls = keep(servers.Ndjson(loop, tls.server_context([])))
        rpc = keep(servers.Grpc(None))
        rpc_tls = keep(servers.Grpc(tls))
        yield {
            "sse": Service("sse", sse.port, sse_tls.port, tls, wire.sse_chunked),
            "websocket": Service("websocket", ws.port, ws_tls.port, tls, wire.websocket),
            "ndjson": Service("ndjson", lines.port, lines_tls.port, tls, wire.ndjson),
            "grpc": Service("grpc", rpc.port, rpc_tls.port, tls, wire.grpc),
        }
    finally:
        for server in reversed(started):
            server.close()
