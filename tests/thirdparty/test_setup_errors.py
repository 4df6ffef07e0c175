"""A real server that does not speak the declared framing: one line naming the cause, outcome
``error``, at once (never a wait for the case's deadline), plain and over TLS.

An HTML error page (status 502) from a Starlette app where SSE was declared; uvicorn's
HTTP/1.1 answer where gRPC (HTTP/2) was declared; grpcio's HTTP/2 answer where SSE was
declared. The line leads with what the stream is when its first bytes show another HTTP
version: the codec's own words then describe bytes it cannot read (``PROTOCOL_ERROR: HTTP/2
frame of 4740180 bytes`` is "HTT" read as a frame length).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.evidence.timeline import Timeline
from harness.judging.results import Outcome
from harness.link.case_wire import CaseWire
from harness.link.live import LinkTraits
from tests.thirdparty import servers, wire
from tests.thirdparty.conftest import DEADLINE_MS, Service, run_against
from tests.thirdparty.servers import AsyncioThread, Tls

SECURITY = pytest.mark.parametrize("secure", [False, True], ids=["plain", "tls"])


@pytest.fixture(scope="module")
def error_pages(asyncio_thread: AsyncioThread, service_tls: Tls) -> Iterator[Service]:
    """An HTML error page at the stream's path, plain and over TLS, declared as SSE."""
    plain = servers.Uvicorn(servers.error_page_app(), asyncio_thread, None)
    secure = servers.Uvicorn(
        servers.error_page_app(), asyncio_thread, service_tls.server_context(["http/1.1"])
    )
    yield Service("sse", plain.port, secure.port, service_tls, wire.sse_chunked)
    secure.close()
    plain.close()


def declared_as(framing: str, service: Service) -> Service:
    """The same server, a scenario declaring another framing for it."""
    return Service(framing, service.port, service.tls_port, service.tls, service.parse)


def one_error_line(diagnosis: str, duration_s: float) -> None:
    assert "\n" not in diagnosis
    assert duration_s < DEADLINE_MS / 1000  # decided at the first bytes, not at the deadline


@SECURITY
async def test_an_html_error_page_where_sse_was_declared(
    error_pages: Service, secure: bool
) -> None:
    result = await run_against(error_pages, secure, "[]", "{complete: true}")
    assert (result.outcome, result.diagnosis) == (
        Outcome.ERROR,
        "upstream refused the request (connection 1): the service answered 502 Bad Gateway: "
        "'<html><body><h1>502 Bad Gateway</h1></body></html>'",
    )
    one_error_line(result.diagnosis, result.duration_s)


@SECURITY
async def test_an_http1_answer_where_grpc_was_declared(
    services: dict[str, Service], secure: bool
) -> None:
    """uvicorn reads the HTTP/2 preface as a request line ``PRI * HTTP/2.0`` and answers 404.
    Over TLS it selects no ALPN protocol where the proxy offered only h2, which says it all
    before a byte is sent."""
    grpc = declared_as("grpc", services["sse"])
    result = await run_against(grpc, secure, "[]", "{complete: true}")
    if secure:
        where = grpc.upstream(True).removeprefix("https://")
        wanted = (
            f"connection 1: upstream {where}: TLS: the upstream chose no ALPN protocol where h2 "
            "was offered: it does not speak HTTP/2 (gRPC) over TLS"
        )
    else:
        wanted = (
            "upstream does not speak grpc (connection 1): an HTTP/1.1 answer ('HTTP/1.1 404 Not "
            "Found'), not HTTP/2 (PROTOCOL_ERROR: HTTP/2 frame of 4740180 bytes)"
        )
    assert (result.outcome, result.diagnosis) == (Outcome.ERROR, wanted)
    one_error_line(result.diagnosis, result.duration_s)


async def test_an_http2_answer_where_sse_was_declared(services: dict[str, Service]) -> None:
    sse = declared_as("sse", services["grpc"])
    result = await run_against(sse, False, "[]", "{complete: true}")
    assert (result.outcome, result.diagnosis) == (
        Outcome.ERROR,
        "upstream does not speak sse (connection 1): an HTTP/2 answer (its first bytes are an "
        "HTTP/2 frame), not HTTP/1.1 (PROTOCOL_ERROR: HTTP: illegal request line)",
    )
    one_error_line(result.diagnosis, result.duration_s)


async def test_a_refused_websocket_upgrade_where_websocket_was_declared(
    services: dict[str, Service],
) -> None:
    """The SSE app has no WebSocket route: uvicorn refuses the upgrade (403, no body)."""
    result = await run_against(
        declared_as("websocket", services["sse"]), False, "[]", "{complete: true}"
    )
    assert (result.outcome, result.diagnosis) == (
        Outcome.ERROR,
        "upstream refused the request (connection 1): the service answered 403 Forbidden",
    )
    one_error_line(result.diagnosis, result.duration_s)


# ---- the same, without sockets: what the first bytes say ----------------------------------------


def setup_problem(framing: str, data: bytes) -> str:
    wire = CaseWire(LinkTraits(framing, payload="messages"), ())
    stream = wire("downstream", 1)
    stream.observe(data)
    stream.observe_end("eof")
    (connection,) = wire.connections(Timeline())
    return connection.setup_problem


def test_an_http1_status_line_on_a_grpc_link_is_named_as_such() -> None:
    answer = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"
    assert setup_problem("grpc", answer) == (
        "an HTTP/1.1 answer ('HTTP/1.1 400 Bad Request'), not HTTP/2 "
        "(PROTOCOL_ERROR: HTTP/2 frame of 4740180 bytes)"
    )


def test_an_http2_settings_frame_on_an_sse_link_is_named_as_such() -> None:
    settings = bytes.fromhex("000006040000000000") + bytes.fromhex("000400100000")
    assert setup_problem("sse", settings) == (
        "an HTTP/2 answer (its first bytes are an HTTP/2 frame), not HTTP/1.1 "
        "(PROTOCOL_ERROR: HTTP: illegal request line)"
    )


def test_an_error_status_is_named_with_what_the_service_said() -> None:
    assert setup_problem("sse", b"HTTP/1.1 502 Bad Gateway\r\n\r\n") == (
        "the service answered 502 Bad Gateway (no body)"
    )
    assert setup_problem("sse", b"HTTP/1.1 404 Nope\r\nContent-Length: 2\r\n\r\n{}") == (
        "the service answered 404 Nope: '{}'"
    )


def test_a_broken_answer_of_the_declared_version_keeps_the_codecs_words() -> None:
    assert setup_problem("sse", b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n") == (
        "PROTOCOL_ERROR: content type 'text/plain', not text/event-stream"
    )
