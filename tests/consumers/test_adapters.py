"""Every client adapter against the reference producer: a clean stream is taken whole (strict),
a cut surfaces as the client's own exception, and the real client bugs the matrix found stay
pinned to the library scenario that shows each (``docs/clients.md``)."""

from __future__ import annotations

from concurrent import futures

import grpc
import pytest
import trio

from harness.consumers.api import LinkInfo, url_for
from harness.consumers.catalogue import ADAPTERS, Adapter, missing_modules
from harness.consumers.outcome import Ending
from harness.judging.results import CaseResult, Grade, Outcome
from harness.link.reference import prepared_link
from harness.matrix.sampling import for_function
from harness.running.execute import RunSettings, run_all
from harness.scenario import load_paths
from harness.scenario.cases import Case, expand
from harness.workers.calling import call
from harness.workers.invoke import prewarm
from harness.workers.pool import close_default_pool
from harness.workers.worker import resolve
from reference_impl.report import Accepted
from tests.harness.conftest import one_case

LINKS = {
    "sse": "{framing: sse, payload: tokens, tokens: {profile: PROFILE, count: 6}}",
    "websocket": "{framing: websocket, payload: messages}",
    "grpc": "{framing: grpc, payload: messages}",
}
CUT = "[{kind: kill, how: fin, at: {frame: 3, fraction: 0.5}}]"
#: an MCP client adapter runs sessions, not streams: tests/mcp/test_case.py runs it
THROUGH_TEARLINE = [a for a in ADAPTERS if a.name != "grpcio" and a.payloads != ("mcp",)]


def _case(adapter: Adapter, faults: str = "[]") -> Case:
    profile = adapter.profiles[0] if adapter.profiles else "openai"
    link = LINKS[adapter.framings[0]].replace("PROFILE", profile)
    link = link.removesuffix("}") + f", consumer: {{function: '{adapter.function}'}}}}"
    return one_case(
        f"name: t\ndescription: d\nlink: {link}\nfaults: {faults}\nexpect: {{complete: true}}\n"
    )


def test_every_adapter_is_installed_for_the_tests() -> None:
    assert {a.name: missing_modules(a) for a in ADAPTERS if missing_modules(a)} == {}


@pytest.fixture(scope="module")
def clean_and_cut() -> dict[str, tuple[CaseResult, CaseResult]]:
    """Each adapter on a clean stream and a cut one, in one run (warm workers, 2 at a time)."""
    for adapter in THROUGH_TEARLINE:  # the imports before the deadlines (a loaded machine)
        assert trio.run(prewarm, adapter.function, 2) == ""
    cases = [c for a in THROUGH_TEARLINE for c in (_case(a), _case(a, CUT))]
    try:
        results = run_all(cases, RunSettings(jobs=1, in_flight=4))
    finally:
        close_default_pool()
    return {a.name: (results[2 * i], results[2 * i + 1]) for i, a in enumerate(THROUGH_TEARLINE)}


@pytest.mark.parametrize("name", [a.name for a in THROUGH_TEARLINE])
def test_a_clean_stream_is_taken_whole(
    name: str, clean_and_cut: dict[str, tuple[CaseResult, CaseResult]]
) -> None:
    clean, _ = clean_and_cut[name]
    assert (clean.outcome, clean.grade) == (Outcome.PASS, Grade.STRICT), clean.diagnosis


#: how each client takes a FIN inside message 3 (a chunked SSE body, a WebSocket without close)
CUT_ENDS = {
    "openai": "RAISED:APIConnectionError",
    "openai-async": "RAISED:APIConnectionError",
    "anthropic": "RAISED:RemoteProtocolError",
    "anthropic-async": "RAISED:RemoteProtocolError",
    "httpx-sse": "RAISED:RemoteProtocolError",
    "httpx-sse-async": "RAISED:RemoteProtocolError",
    "sseclient-py": "RAISED:ChunkedEncodingError",
    "requests": "RAISED:ChunkedEncodingError",
    "aiohttp-sse": "RAISED:ClientPayloadError",
    "aiohttp-ws": "COMPLETE",  # a real bug: see test_real_client_bugs
    "websockets": "RAISED:ConnectionClosedError",
}


@pytest.mark.parametrize("name", [a.name for a in THROUGH_TEARLINE])
def test_a_cut_surfaces_as_the_clients_exception(
    name: str, clean_and_cut: dict[str, tuple[CaseResult, CaseResult]]
) -> None:
    _, cut = clean_and_cut[name]
    report = cut.report
    assert report is not None, cut.diagnosis
    assert report.verdict == CUT_ENDS[name]
    assert len(report.accepted) <= 2


#: (adapter, library scenario file, case id, what the judge says): docs/clients.md
REAL_BUGS = [
    (
        "sseclient-py",
        "scenarios/framing-sse/incomplete-final-event.yaml",
        "incomplete-final-event::cut-inside-last-data-line",
        "I1: connection 1: accepted message 4",
    ),
    (
        "httpx-sse",
        "scenarios/seed002-tokens/invalid-utf8-mid-stream.yaml",
        "invalid-utf8-mid-stream::openai[framing=sse]",
        "I1: connection 1: accepted message",
    ),
    (
        "openai",
        "scenarios/framing-sse/close-delimited-cut-at-boundary.yaml",
        "close-delimited-cut-at-boundary::tokens-policy-refuses",
        "I2: complete result although kill",
    ),
    (
        "aiohttp-ws",
        "scenarios/framing-websocket/binary-messages.yaml",
        "binary-messages::cut-inside-a-fragment",
        "I2: complete result although kill",
    ),
    (
        "httpx-sse",
        "scenarios/framing-sse/bytes-inserted.yaml",
        "bytes-inserted::stray-cr-between-events",
        "I1: connection 1: accepted message 3 ('', 0 B",
    ),
    (
        "requests",
        "scenarios/transport/response-head-cut-mid-header.yaml",
        "response-head-cut-mid-header::sse-cut-between-header-lines",
        "I2: complete result although kill cut connection 1 at byte 50",
    ),
]


def test_real_client_bugs() -> None:
    picked = []
    for name, path, case_id, _ in REAL_BUGS:
        adapter = next(a for a in ADAPTERS if a.name == name)
        (scenario_case,) = [
            c for s in load_paths([path]) for c in expand(s, prepared_link) if c.case_id == case_id
        ]
        picked.append(for_function(scenario_case, adapter.function))
        assert trio.run(prewarm, adapter.function, 1) == ""
    try:
        results = run_all(picked, RunSettings(jobs=1, in_flight=4))
    finally:
        close_default_pool()
    for (name, _, case_id, diagnosis), result in zip(REAL_BUGS, results, strict=True):
        assert (result.outcome, result.grade) == (Outcome.VIOLATION, Grade.FAILED), (
            name,
            result.diagnosis,
        )
        assert diagnosis in result.diagnosis, (name, case_id, result.diagnosis)


# --- grpcio: against a real gRPC server (the reference producer sends its HTTP/2 SETTINGS only
# after the request, and grpcio waits for them first: docs/clients.md) ----------------------

MESSAGES = [b"one", b"\x00two", b""]


def _stream(request: bytes, context: grpc.ServicerContext) -> object:
    yield from MESSAGES


def test_grpcio_hands_on_each_message_of_a_real_grpc_server() -> None:
    handler = grpc.method_handlers_generic_handler(
        "tearline", {"stream": grpc.unary_stream_rpc_method_handler(_stream)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        link = LinkInfo(
            "127.0.0.1",
            port,
            "grpc",
            "messages",
            None,
            url_for("grpc", "127.0.0.1", port),
            path="/tearline/stream",
            deadline_s=10.0,
        )
        outcome = call(resolve(next(a for a in ADAPTERS if a.name == "grpcio").function), link)
    finally:
        server.stop(None)
    assert outcome.ending is Ending.RETURNED, outcome.text
    assert outcome.accepted == tuple(Accepted.of(m) for m in MESSAGES)


def test_grpcio_through_tearline() -> None:
    adapter = next(a for a in ADAPTERS if a.name == "grpcio")
    consumer = f"consumer: {{function: '{adapter.function}'}}"
    case = one_case(
        "name: t\ndescription: d\n"
        f"link: {{framing: grpc, payload: messages, {consumer}}}\n"
        "expect: {complete: true}\ndeadline_ms: 3000\n"
    )
    (result,) = run_all([case], RunSettings())
    assert result.outcome is Outcome.PASS
