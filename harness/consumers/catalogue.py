"""Adapters: real client libraries wrapped as consumer functions (the ``clients`` extra).

Each adapter module uses its library the way the library's docs show an application using it
and reports exactly what the library hands on and what it raises, adding no check of its own.
This module is the table of them (pure: it imports no client library); ``installed`` says which
can run here, without importing them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from importlib import metadata

ANY = None
PACKAGE = "harness.adapters"


@dataclass(frozen=True, slots=True)
class Adapter:
    """One client library as a consumer function, and the links it can speak."""

    #: the name in ``tearline clients`` and in the matrix
    name: str
    #: ``module:function`` of the consumer function
    function: str
    #: the PyPI distributions it needs (the first is the client, whose version is reported)
    distributions: tuple[str, ...]
    #: the import names of those distributions
    modules: tuple[str, ...]
    framings: tuple[str, ...]
    #: payloads it can carry (None: any stream's; an MCP session, payload mcp, only when
    #: named: its adapters run a session, not a stream)
    payloads: tuple[str, ...] | None = ANY
    #: token profiles it needs (None: any; only for payload tokens)
    profiles: tuple[str, ...] | None = ANY
    #: how it reads the stream, in a few words
    how: str = ""
    #: the link settings among ``NEEDS`` it gives its library (a read timeout for the idle
    #: timeout, a maximum message size); it lacks the others (``lacks``)
    honours: frozenset[str] = frozenset()

    @property
    def client(self) -> str:
        return self.distributions[0]

    @property
    def install(self) -> str:
        names = " ".join(self.distributions)
        return f"pip install {names}  (or pip install 'tearline[clients]')"


#: what an expectation can need a consumer to be given (``harness.judging.needs.NEEDS``)
NEEDS = frozenset({"idle_timeout", "incomplete_message_timeout", "max_message_bytes", "payload"})
#: a read timeout: the link's idle timeout (no client library has an incomplete-message one)
READ_TIMEOUT = frozenset({"idle_timeout"})
#: a maximum message size: the link's ``max_message_bytes``
SIZE_CAP = frozenset({"max_message_bytes"})


def _ref(module: str, function: str = "consume") -> str:
    return f"{PACKAGE}.{module}:{function}"


SSE, TOKENS, MCP = ("sse",), ("tokens",), ("mcp",)

ADAPTERS: tuple[Adapter, ...] = (
    Adapter(
        "mcp-python",
        _ref("mcp_sdk", "call_tools"),
        ("mcp",),
        ("mcp",),
        SSE,
        MCP,
        how="streamablehttp_client(url) + ClientSession.call_tool(progress_callback=...)",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "openai",
        _ref("openai_sdk"),
        ("openai",),
        ("openai",),
        SSE,
        TOKENS,
        ("openai",),
        how="OpenAI().chat.completions.create(stream=True)",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "openai-async",
        _ref("openai_sdk", "consume_async"),
        ("openai",),
        ("openai",),
        SSE,
        TOKENS,
        ("openai",),
        how="AsyncOpenAI().chat.completions.create(stream=True)",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "anthropic",
        _ref("anthropic_sdk"),
        ("anthropic",),
        ("anthropic",),
        SSE,
        TOKENS,
        ("anthropic",),
        how="Anthropic().messages.create(stream=True)",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "anthropic-async",
        _ref("anthropic_sdk", "consume_async"),
        ("anthropic",),
        ("anthropic",),
        SSE,
        TOKENS,
        ("anthropic",),
        how="AsyncAnthropic().messages.create(stream=True)",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "httpx-sse",
        _ref("httpx_sse_client"),
        ("httpx-sse", "httpx"),
        ("httpx_sse", "httpx"),
        SSE,
        how="connect_sse(httpx.Client(), 'GET', url).iter_sse()",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "httpx-sse-async",
        _ref("httpx_sse_client", "consume_async"),
        ("httpx-sse", "httpx"),
        ("httpx_sse", "httpx"),
        SSE,
        how="aconnect_sse(httpx.AsyncClient(), 'GET', url).aiter_sse()",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "sseclient-py",
        _ref("sseclient_py"),
        ("sseclient-py", "requests"),
        ("sseclient", "requests"),
        SSE,
        how="SSEClient(requests.get(url, stream=True)).events()",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "requests",
        _ref("requests_lines"),
        ("requests",),
        ("requests",),
        SSE,
        how="requests.get(url, stream=True).iter_lines() + event assembly",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "aiohttp-sse",
        _ref("aiohttp_client", "consume_sse"),
        ("aiohttp",),
        ("aiohttp",),
        SSE,
        how="async for line in session.get(url).content + event assembly",
        honours=READ_TIMEOUT,
    ),
    Adapter(
        "aiohttp-ws",
        _ref("aiohttp_client", "consume_websocket"),
        ("aiohttp",),
        ("aiohttp",),
        ("websocket",),
        how="async for msg in session.ws_connect(url)",
        honours=SIZE_CAP,
    ),
    Adapter(
        "websockets",
        _ref("websockets_client"),
        ("websockets",),
        ("websockets",),
        ("websocket",),
        how="async for message in websockets.asyncio.client.connect(url)",
        honours=SIZE_CAP,
    ),
    Adapter(
        "grpcio",
        _ref("grpcio_client"),
        ("grpcio",),
        ("grpc",),
        ("grpc",),
        how="channel.unary_stream(path)(b'')",
        honours=SIZE_CAP,
    ),
)


def hands_on_transport(function: str | None) -> bool:
    """Whether ``function`` is the adapter of a client below the payload layer: one that
    carries any payload and hands on what the transport delivered (checking an envelope's
    records against its checksum is its application's job; ``docs/grades.md``). The SDKs
    parse their payload and are not."""
    return function is not None and any(
        a.function == function and a.payloads is ANY for a in ADAPTERS
    )


def runs_sessions(function: str) -> bool:
    """Whether ``function`` is an MCP client adapter of the table: it runs an MCP session
    (payload mcp), not a stream."""
    return any(a.function == function and a.payloads == MCP for a in ADAPTERS)


def lacks(function: str | None) -> frozenset[str]:
    """What the adapter of ``function`` cannot give its library of what an expectation can
    need (``NEEDS``; ``docs/grades.md``): the settings it does not honour, and the payload's
    rules for a client below the payload layer. Empty for any other consumer: a consumer
    program or a team's own function is told every setting by the contract."""
    adapter = next((a for a in ADAPTERS if a.function == function), None)
    if adapter is None:
        return frozenset()
    known = adapter.honours | (frozenset() if adapter.payloads is ANY else {"payload"})
    return NEEDS - known


def by_name(name: str) -> Adapter | None:
    return next((a for a in ADAPTERS if a.name == name), None)


def missing_modules(adapter: Adapter) -> tuple[str, ...]:
    """The import names of ``adapter`` that are not installed (found without importing)."""
    return tuple(m for m in adapter.modules if importlib.util.find_spec(m) is None)


def version(adapter: Adapter) -> str:
    try:
        return metadata.version(adapter.client)
    except metadata.PackageNotFoundError:
        return "?"
