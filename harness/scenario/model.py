"""The scenario model: one YAML scenario as frozen dataclasses, defined once.

The loader validates YAML against these classes, the JSON Schema is generated from them and
``docs/scenario-format.md`` documents them, so a key exists when (and only when) a field here
says so. Field types carry their own limits (``Annotated[int, Ge(1), Le(...)]``, the upper
bounds from ``harness.config.limits``); rules between fields live in ``__post_init__`` and
raise ``FieldError`` with the key path they concern, so the loader can point at the key.
``#:`` comments above fields become the schema's descriptions. Defaults are the reference
link's (``reference_impl.defaults``): one set for every way a link is described.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from harness.config.constraints import Ge, Gt, Le, MaxLen, MinLen, OneOf, Pattern
from harness.config.fields import CUSTOM, INTERNAL, yaml_key
from harness.config.limits import (
    MAX_COUNT,
    MAX_DURATION_MS,
    MAX_FAULTS,
    MAX_FRAGMENTS,
    MAX_MESSAGE_BYTES,
    MAX_MESSAGES,
    MAX_PAYLOAD_BYTES,
    MAX_RECONNECTS,
    MAX_REPLAY_SPEED,
    MAX_SEED,
)
from harness.errors import FieldError, KeyPath
from harness.faults.config import Fault
from harness.faults.heartbeat import heartbeat_problem
from reference_impl import defaults
from reference_impl.errors import ErrorCode
from reference_impl.framing import FramingName
from reference_impl.framing.request import parse_header
from reference_impl.mcp.checker import Violation
from reference_impl.mcp.errors import McpErrorCode
from reference_impl.mcp.settings import SERVER_MODES, SPEC_VERSIONS
from reference_impl.payload import PAYLOAD_NAMES, PayloadName

#: Verdicts of the seed guards and of a verified envelope, spelled as the seeds spell them.
SEED_VERDICTS = (
    "MESSAGE_COMPLETE",
    "MESSAGE_IN_PROGRESS",
    "STALE_PARTIAL_BUFFER",
    "DISCARD_AND_RESET",
    "COMPLETE_EXPLICIT",
    "COMPLETE_BY_LENGTH",
    "PARTIAL_MID_TOKEN",
    "PARTIAL_SAFE_BOUNDARY",
    "RESULT_VERIFIED",
)
#: Verdicts that say the whole stream was delivered (a client that does not take it is wrong).
SUCCESS_VERDICTS = frozenset(
    {"MESSAGE_COMPLETE", "COMPLETE_EXPLICIT", "COMPLETE_BY_LENGTH", "RESULT_VERIFIED"}
)
#: Everything ``expect.verdict`` / ``expect.any_of`` may name.
VERDICTS: tuple[str, ...] = SEED_VERDICTS + tuple(code.value for code in ErrorCode)

Verdict = Annotated[str, OneOf(VERDICTS, what="verdict or error code")]
FaultList = Annotated[tuple[Fault, ...], MaxLen(MAX_FAULTS)]
Count = Annotated[int, Ge(0), Le(MAX_COUNT)]
Messages = Annotated[int, Ge(0), Le(MAX_MESSAGES)]
MessageBytes = Annotated[int, Ge(0), Le(MAX_MESSAGE_BYTES)]
Millis = Annotated[float, Gt(0), Le(MAX_DURATION_MS)]
ScenarioName = Annotated[
    str,
    Pattern(
        r"[a-z0-9][a-z0-9._-]*",
        "must be lowercase letters, digits, '.', '_' or '-', starting with a letter or digit",
    ),
]
FunctionRef = Annotated[
    str,
    Pattern(
        r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*",
        "must be package.module:function",
    ),
]
HostPort = Annotated[
    str, Pattern(r"(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]]+):[0-9]{1,5}", "must be host:port")
]
HTTPS = "https://"
#: ``host:port`` (plain TCP) or ``https://host:port`` (TLS, the certificate verified)
#: a request target: an absolute path, visible ASCII (it is written into the request line)
RequestPath = Annotated[
    str,
    Pattern(r"/[!-~]{0,1023}", "must be a path: '/' then up to 1023 visible ASCII characters"),
]
Upstream = Annotated[
    str,
    Pattern(
        r"(https://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):[0-9]{1,5}",
        "must be host:port or https://host:port",
    ),
]
#: an HTTP method an agent API is called with
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
#: a header as curl's ``-H`` takes it: ``Name: value``
HeaderLine = Annotated[str, MinLen(1), MaxLen(8192)]
#: a media type (``application/json``), without parameters
MediaType = Annotated[
    str, Pattern(r"[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+", "must be a media type (type/subtype)")
]


def split_upstream(text: str) -> tuple[bool, str, int]:
    """``https://host:port`` or ``host:port`` (IPv6 in brackets) as (TLS?, host, port)."""
    tls = text.startswith(HTTPS)
    host, _, port = text.removeprefix(HTTPS).rpartition(":")
    return tls, host.strip("[]"), int(port)


@dataclass(frozen=True, slots=True)
class MessagesConfig:
    """Payload ``messages``: ``count`` generated messages of ``size_bytes`` each, or exactly
    the given ``texts``."""

    #: number of generated messages (5 when neither count nor texts is given)
    count: Messages | None = None
    #: size of each generated message in bytes (64 when not given)
    size_bytes: MessageBytes | None = None
    #: the exact messages (sent UTF-8 encoded), instead of count and size_bytes
    texts: Annotated[tuple[str, ...], MinLen(0)] | None = None

    def __post_init__(self) -> None:
        if self.texts is not None and (self.count is not None or self.size_bytes is not None):
            raise FieldError("give either texts or count/size_bytes, not both", path=("texts",))
        if self.texts is not None and len(self.texts) > MAX_MESSAGES:
            raise FieldError(f"at most {MAX_MESSAGES} messages", path=("texts",))
        if self.payload_bytes > MAX_PAYLOAD_BYTES:
            what = "the texts together are" if self.texts is not None else "count x size_bytes is"
            where = "texts" if self.texts is not None else "count"
            raise FieldError(
                f"{what} over {MAX_PAYLOAD_BYTES >> 20} MiB, the most a scenario's messages "
                "may make",
                path=("size_bytes" if self.size_bytes is not None else where,),
            )

    @property
    def payload_bytes(self) -> int:
        """Bytes of all the messages, or just past ``MAX_PAYLOAD_BYTES`` when over: texts
        aliased a thousand times are counted without encoding them all."""
        if self.texts is None:
            return self.message_count * self.message_bytes
        total = 0
        for text in self.texts:
            total += len(text) if len(text) > MAX_PAYLOAD_BYTES else len(text.encode())
            if total > MAX_PAYLOAD_BYTES:
                break
        return total

    @property
    def message_count(self) -> int:
        """How many messages the producer sends."""
        if self.texts is not None:
            return len(self.texts)
        return defaults.MESSAGE_COUNT if self.count is None else self.count

    @property
    def message_bytes(self) -> int:
        """The size of each generated message (unused when ``texts`` is given)."""
        return defaults.MESSAGE_BYTES if self.size_bytes is None else self.size_bytes


@dataclass(frozen=True, slots=True)
class EnvelopeConfig:
    """Payload ``envelope``: the result envelope of seed 001 (header, chunks, trailer)."""

    #: number of result records
    records: Messages = defaults.ENVELOPE_RECORDS
    #: records per chunk frame (B of seed 001)
    chunk_records: Annotated[int, Ge(1), Le(MAX_MESSAGES)] = defaults.ENVELOPE_CHUNK_RECORDS


#: the token settings that only some producer profiles have
_PROFILE_SETTINGS = {
    "tools": ("openai-responses", "anthropic"),
    "length_limited": ("openai-responses", "anthropic"),
    "thinking": ("anthropic",),
}


TokenProfile = Literal["openai", "anthropic", "generic", "ollama", "openai-responses"]


@dataclass(frozen=True, slots=True)
class TokensConfig:
    """Payload ``tokens``: an LLM-style token stream (seed 002)."""

    #: producer profile, which decides the completion signal
    profile: TokenProfile = defaults.TOKEN_PROFILE  # type: ignore[assignment]
    #: number of tokens
    count: Messages = defaults.TOKEN_COUNT
    #: whether the producer announces the length up front (enables COMPLETE_BY_LENGTH)
    advertise_length: bool = False
    #: whether the producer ends with its completion signal
    send_completion: bool = True
    #: why the model stopped: ``stop`` (its own end) or ``length`` (a token limit: the stream
    #: is complete, the answer cut; Ollama's ``done_reason``); ``length`` only with profile
    #: ollama
    stop_reason: Literal["stop", "length"] = "stop"
    #: tool calls the producer makes after the text (profiles ``openai-responses``,
    #: ``anthropic``)
    tools: Annotated[int, Ge(0), Le(defaults.MAX_TOOL_CALLS)] = 0
    #: the producer stops at its output limit and says so (``response.incomplete``, stop
    #: reason ``max_tokens``): truncation by length, never a complete answer
    length_limited: bool = False
    #: a thinking block before the text (profile ``anthropic``)
    thinking: bool = False

    def __post_init__(self) -> None:
        if self.stop_reason != "stop" and self.profile != "ollama":
            message = "only the ollama profile writes a stop reason (done_reason)"
            raise FieldError(message, path=("stop_reason",))
        for key, profiles in _PROFILE_SETTINGS.items():
            if getattr(self, key) and self.profile not in profiles:
                raise FieldError(f"only with profile {' or '.join(profiles)}", path=(key,))


#: a spec version of MCP's Streamable HTTP transport
McpVersion = Annotated[str, OneOf(SPEC_VERSIONS, what="MCP spec version")]
McpServerMode = Annotated[str, OneOf(SERVER_MODES, what="server mode")]
McpFinding = Annotated[
    str, OneOf(tuple(v for v in Violation if v is not Violation.NO_ANSWER), what="session finding")
]
McpError = Annotated[str, OneOf(tuple(McpErrorCode), what="MCP error code")]
#: the most tool calls one MCP session makes
MAX_MCP_CALLS = 20
#: the most progress notifications before one call's response
MAX_MCP_STEPS = 100


@dataclass(frozen=True, slots=True)
class McpConfig:
    """Payload ``mcp``: the link is an MCP session over Streamable HTTP between the reference
    server and the client (docs/mcp.md): initialize, the initialized notification,
    ``tools/list``, then ``calls`` tool calls, each answered after ``steps`` progress
    notifications. Every exchange is a connection of its own (initialize is connection 1)."""

    #: the spec version the reference server speaks (the client speaks what it answers)
    version: McpVersion = "2025-11-25"
    #: tool calls the client makes, one after the other
    calls: Annotated[int, Ge(1), Le(MAX_MCP_CALLS)] = 1
    #: progress notifications before each call's response
    steps: Annotated[int, Ge(0), Le(MAX_MCP_STEPS)] = 3
    #: how the server answers a request: an SSE stream, or JSON when nothing comes first
    answer: Literal["sse", "json"] = "sse"
    #: how the reference server misbehaves on purpose (``correct``: it does not)
    server_mode: McpServerMode = "correct"
    #: the server closes each tool call's stream after this many events (the priming event
    #: included; 0: right after the head) and keeps the rest for a resume (None: never)
    close_after_events: Annotated[int, Ge(0), Le(MAX_COUNT)] | None = None
    #: the ``retry`` of the priming event (2025-11-25), in milliseconds
    retry_ms: Annotated[int, Ge(0), Le(MAX_DURATION_MS)] = 100
    #: the server's pause between two events of a stream, in milliseconds
    event_delay_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] = 0.0


@dataclass(frozen=True, slots=True)
class FramingConfig:
    """Framing knobs; each framing reads the ones that concern it."""

    #: largest message a codec accepts, in bytes
    max_message_bytes: Annotated[int, Ge(1), Le(MAX_MESSAGE_BYTES)] = defaults.MAX_MESSAGE_BYTES
    #: SSE body: chunked transfer encoding (explicit end) or ended by closing the connection
    sse_body: Literal["chunked", "close"] = "chunked"
    #: WebSocket messages as text (UTF-8 validated) or binary
    ws_text: bool = True
    #: WebSocket fragment size in bytes (0: each message in one frame)
    ws_fragment_bytes: MessageBytes = 0
    #: what the consumer asks for: the SSE or WebSocket request target, the gRPC method
    #: (``/package.Service/Method``); your own producer may serve another path than ours
    path: RequestPath = defaults.REQUEST_PATH
    #: the HTTP response body of sse and ndjson-http, the same choice as ``sse_body`` under a
    #: name that fits both (give one of the two)
    http_body: Literal["chunked", "close"] | None = None

    def __post_init__(self) -> None:
        # ``http_body`` is ``sse_body`` by a framing-neutral name: everything reads sse_body.
        if self.http_body is None:
            return
        if self.sse_body not in ("chunked", self.http_body):
            raise FieldError("differs from sse_body: give the body once", path=("http_body",))
        object.__setattr__(self, "sse_body", self.http_body)


@dataclass(frozen=True, slots=True)
class RequestConfig:
    """What the consumer sends, as agents call their APIs: an HTTP request (SSE, NDJSON over
    HTTP), the WebSocket upgrade's headers (the body as the first message after it), a gRPC
    call's metadata and request message, or the body as it is on a framed TCP stream. The path,
    headers and body may hold ``{host}`` and ``{port}``, filled in when the consumer connects."""

    #: the HTTP method (default: GET, or POST when there is a body; a WebSocket upgrade is
    #: always a GET, a gRPC call always a POST)
    method: Method | None = None
    #: the request target, or the gRPC method (``/package.Service/Method``); default
    #: ``framing_options.path``
    path: RequestPath | None = None
    #: headers, each ``Name: value`` as curl's ``-H`` takes them, sent in this order (on gRPC,
    #: the call's metadata); ``Host`` and the lengths are written by the framing
    headers: Annotated[tuple[HeaderLine, ...], MaxLen(defaults.MAX_REQUEST_HEADERS)] = ()
    #: the body, as text (sent as its UTF-8 bytes)
    body: Annotated[str, MaxLen(defaults.MAX_REQUEST_BODY_BYTES)] | None = None
    #: the body, read from this file (a relative path is taken from the directory tearline
    #: runs in)
    body_file: Annotated[str, MinLen(1)] | None = None

    def __post_init__(self) -> None:
        for index, line in enumerate(self.headers):
            try:
                parse_header(line)
            except ValueError as err:
                raise FieldError(str(err), path=("headers", index)) from None
        if self.body is not None and self.body_file is not None:
            raise FieldError("give body or body_file, not both", path=("body_file",))
        if self.body is not None and len(self.body.encode()) > defaults.MAX_REQUEST_BODY_BYTES:
            limit = defaults.MAX_REQUEST_BODY_BYTES
            raise FieldError(f"at most {limit} bytes of UTF-8", path=("body",))


@dataclass(frozen=True, slots=True)
class RouteConfig:
    """What the reference producer serves; a request it does not serve is answered as agent
    APIs answer one (404 another path, 405 another method, 415 another content type, 400 a
    JSON body that does not parse), with a JSON error body and no stream."""

    #: the path served (default: the request's)
    path: RequestPath | None = None
    #: the method served (default: the request's)
    method: Method | None = None
    #: the content type a body must have (default: the request's, if it names one)
    content_type: MediaType | None = None


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """The producer side of the link."""

    #: what a reconnecting consumer gets: the stream from the start, or from where it stopped
    mode: Literal["restart", "continue"] = "restart"
    #: chunks the producer may hold for a slow consumer (C_cap of seed 001)
    channel_capacity_chunks: Annotated[int, Ge(1), Le(MAX_MESSAGES)] = (
        defaults.CHANNEL_CAPACITY_CHUNKS
    )
    #: your own producer, used instead of the reference producer: ``host:port`` (TCP) or
    #: ``https://host:port`` (TLS, its certificate verified against the system's CAs)
    upstream: Upstream | None = None
    #: with an https upstream: a PEM file of the CA that issued its certificate, trusted
    #: instead of the system's (a private CA)
    upstream_ca: Annotated[str, MinLen(1)] | None = None
    #: with an https upstream: do not verify its certificate (a self-signed test server)
    upstream_insecure: bool = False
    #: a recording (``tearline record``) played back as the producer, to every connection,
    #: instead of the reference producer; a relative path is taken from the directory tearline
    #: runs in (docs/recording-format.md)
    replay: Annotated[str, MinLen(1)] | None = None
    #: how fast the replay plays: 1 keeps the recorded timing, 2 halves every delay, 0 sends
    #: everything as fast as possible
    speed: Annotated[float, Ge(0), Le(MAX_REPLAY_SPEED)] = 1.0
    #: what the reference producer serves (default: exactly the link's request)
    serves: RouteConfig | None = None

    def __post_init__(self) -> None:
        if self.replay is not None and self.upstream is not None:
            raise FieldError("give either upstream or replay, not both", path=("replay",))
        if self.replay is not None and self.mode == "continue":
            # every connection gets the same recording: none continues where one stopped
            raise FieldError("a replay always restarts; use mode restart", path=("mode",))
        if self.replay is None and self.speed != 1.0:
            raise FieldError("only with replay", path=("speed",))
        self._check_tls()

    def _check_tls(self) -> None:
        """The TLS keys go with an https upstream only."""
        https = self.upstream is not None and self.upstream.startswith(HTTPS)
        if self.upstream_ca is not None and not https:
            raise FieldError("only with an https://host:port upstream", path=("upstream_ca",))
        if self.upstream_insecure and not https:
            raise FieldError("only with an https://host:port upstream", path=("upstream_insecure",))
        if self.upstream_ca is not None and self.upstream_insecure:
            raise FieldError(
                "give either upstream_ca or upstream_insecure, not both",
                path=("upstream_insecure",),
            )

    @property
    def external(self) -> bool:
        """Whether the stream comes from a producer tearline did not write (yours, or a
        recording of one): nothing is known of it but what the proxy reads."""
        return self.upstream is not None or self.replay is not None


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """The consumer side of the link."""

    #: a partial message older than this is stale (seed 000), in milliseconds
    incomplete_message_timeout_ms: Millis = defaults.INCOMPLETE_MESSAGE_TIMEOUT_S * 1000
    #: how long to wait at a message boundary for the next byte before calling the link dead,
    #: in milliseconds
    idle_timeout_ms: Millis = defaults.IDLE_TIMEOUT_S * 1000
    #: accept a token stream cut at a safe boundary as a partial result (seed 002)
    accept_partial_at_safe_boundary: bool = False
    #: how many times the consumer reconnects after the link breaks
    max_reconnects: Annotated[int, Ge(0), Le(MAX_RECONNECTS)] = 0
    #: bytes asked for per socket read
    read_bytes: Annotated[int, Ge(1), Le(MAX_MESSAGE_BYTES)] = defaults.READ_BYTES
    #: pause once this many messages were accepted and the next one is in flight: checkpoint
    #: the partial buffer, wait pause_ms, then the successor verifies it (seed 000)
    pause_at_message: Count | None = None
    #: how long that pause lasts, in milliseconds
    pause_ms: Annotated[float, Ge(0), Le(MAX_DURATION_MS)] = 0.0
    #: treat the byte stream as unframed (seed 000 gate 1): the consumer refuses to parse it
    #: and reports DISCARD_AND_RESET
    unframed: bool = False
    #: your own consumer program (argv), used instead of the reference consumer
    command: Annotated[tuple[str, ...], MinLen(1)] | None = None
    #: your own consumer as a Python function, ``package.module:function``
    #: (docs/python-consumers.md)
    function: FunctionRef | None = None
    #: how long to wait for content (a message the payload counts: a token, a tool call's
    #: fragment, a record) before calling the link dead, whatever else arrives meanwhile
    #: (heartbeats, pings), in milliseconds; none: only ``idle_timeout_ms`` applies
    content_idle_timeout_ms: Millis | None = None

    def __post_init__(self) -> None:
        if self.command is not None and self.function is not None:
            raise FieldError("give either command or function, not both", path=("function",))


@dataclass(frozen=True, slots=True)
class Link:
    """A framing carrying a payload, between a producer and a consumer."""

    #: transport framing
    framing: FramingName
    #: application stream carried by the framing
    payload: PayloadName
    #: settings of payload messages (only with payload: messages)
    messages: MessagesConfig | None = None
    #: settings of payload envelope (only with payload: envelope)
    envelope: EnvelopeConfig | None = None
    #: settings of payload tokens (only with payload: tokens)
    tokens: TokensConfig | None = None
    #: settings of payload mcp (only with payload: mcp)
    mcp: McpConfig | None = None
    framing_options: FramingConfig = FramingConfig()
    #: what the consumer sends (default: the framing's plain request for the path)
    request: RequestConfig = RequestConfig()
    producer: ProducerConfig = ProducerConfig()
    consumer: ConsumerConfig = ConsumerConfig()
    #: TLS between the consumer and the proxy, with a certificate from the run's test CA
    #: (handed to consumer programs as ``{ca_file}``); with the reference producer, between
    #: the proxy and the producer too (``tearline run --tls``)
    tls: bool = False

    def __post_init__(self) -> None:
        if self.producer.mode == "continue" and self.framing != "sse":
            # The producer can only continue where the consumer stopped if the consumer can
            # say where that was; of our framings only SSE has such a cursor (Last-Event-ID).
            raise FieldError(
                "continue needs a resume cursor, which only framing sse has "
                f"(Last-Event-ID); use restart with {self.framing}",
                path=("producer", "mode"),
            )
        self._check_mcp()
        self._check_ndjson_texts()
        self._check_messages()
        self._check_fragments()
        self._check_request()
        for name in PAYLOAD_NAMES:
            if name != self.payload and getattr(self, name) is not None:
                raise FieldError(
                    f"only for payload {name} (this link's payload is {self.payload})",
                    path=(name,),
                )

    def _check_mcp(self) -> None:
        """An MCP session runs over SSE between tearline's server and a client that reports
        its calls: the reference client, or a client adapter (a function)."""
        if self.payload != "mcp":
            return
        if self.framing != "sse":
            raise FieldError("an MCP session runs over framing sse", path=("framing",))
        if self.producer.external or self.producer.serves is not None:
            message = "an MCP session's server is tearline's (mcp.server_mode says how it acts)"
            raise FieldError(message, path=("producer",))
        if self.consumer.command is not None:
            message = "an MCP session's client is the reference one or a function"
            raise FieldError(message, path=("consumer", "command"))
        if self.tls or self.request != RequestConfig():
            key = "tls" if self.tls else "request"
            raise FieldError(
                "not with payload mcp (the client makes its own requests)", path=(key,)
            )

    def _check_messages(self) -> None:
        """The stream's messages, an envelope's header and trailer and a token stream's
        signals included, are at most ``MAX_MESSAGES``: a report lists that many (so a
        consumer that took them all is never judged on a cut list)."""
        count = payload_messages(self)
        if count > MAX_MESSAGES and self.payload in _SIGNALS:  # else count, texts say so
            key = "records" if self.payload == "envelope" else "count"
            raise FieldError(
                f"makes {count} messages with its {_SIGNALS[self.payload]}; at most "
                f"{MAX_MESSAGES} in one stream",
                path=(self.payload, key),
            )

    @property
    def request_path(self) -> str:
        """The path the consumer asks for: ``request.path``, else ``framing_options.path``."""
        return self.request.path or self.framing_options.path

    def _check_request(self) -> None:
        """What a request can mean on this link's framing, and one path for it."""
        request, framing = self.request, self.framing
        older = self.framing_options.path
        if request.path not in (None, older) and older != defaults.REQUEST_PATH:
            message = f"differs from framing_options.path ({older}): give the path once"
            raise FieldError(message, path=("request", "path"))
        fixed = {"websocket": "GET", "grpc": "POST"}.get(framing)
        if fixed is not None and request.method not in (None, fixed):
            message = f"a {framing} link's request is always a {fixed}"
            raise FieldError(message, path=("request", "method"))
        if framing in ("length-prefixed", "ndjson"):
            for key in ("method", "path", "headers"):
                if getattr(request, key) not in (None, ()):
                    message = f"framing {framing} sends no HTTP request (only body applies)"
                    raise FieldError(message, path=("request", key))
        if self.producer.serves is not None and self.producer.external:
            message = "only for the reference producer (not with upstream or replay)"
            raise FieldError(message, path=("producer", "serves"))

    def _check_fragments(self) -> None:
        """WebSocket fragments of a few bytes multiply the frames the reference codecs make
        before each case (about 80 us each): at most ``MAX_FRAGMENTS`` in the stream."""
        size = self.framing_options.ws_fragment_bytes
        if self.framing != "websocket" or not size:
            return
        fragments = -(-payload_size(self) // size) + payload_messages(self)
        if fragments > MAX_FRAGMENTS:
            raise FieldError(
                f"makes about {fragments} WebSocket fragments of this payload; at most "
                f"{MAX_FRAGMENTS} (a larger ws_fragment_bytes, or a smaller payload)",
                path=("framing_options", "ws_fragment_bytes"),
            )

    def _check_ndjson_texts(self) -> None:
        """An NDJSON line can be no message that is empty, holds an LF or ends in CR."""
        texts = self.messages.texts if self.messages is not None else None
        if self.framing not in (FramingName.NDJSON, FramingName.NDJSON_HTTP) or not texts:
            return
        for index, text in enumerate(texts):
            if not text or "\n" in text or text.endswith("\r"):
                raise FieldError(
                    "an NDJSON message is one line: not empty, no LF, not ending in CR",
                    path=("messages", "texts", index),
                )

    @property
    def payload_config(self) -> MessagesConfig | EnvelopeConfig | TokensConfig | McpConfig:
        """The settings of this link's payload, defaults filled in when none were given."""
        if self.payload == "messages":
            return self.messages or MessagesConfig()
        if self.payload == "envelope":
            return self.envelope or EnvelopeConfig()
        if self.payload == "mcp":
            return self.mcp or McpConfig()
        return self.tokens or TokensConfig()


#: what an envelope record and a token weigh on the wire, about (from the reference codecs;
#: rounded up), for bounds that must hold before the stream is made
ENVELOPE_RECORD_BYTES = 100
TOKEN_BYTES = 64
MCP_MESSAGE_BYTES = 200


#: messages a token stream makes besides its tokens and tool calls, at most (the anthropic
#: profile's events; the Responses profile's), and those of one tool call, at most (its
#: arguments in fragments)
TOKEN_SIGNALS = 6
RESPONSES_SIGNALS = 8
TOOL_CALL_MESSAGES = 16
#: an anthropic thinking block and its ping, at most
THINKING_MESSAGES = 8
TOOL_CALL_BYTES = TOOL_CALL_MESSAGES * 200
_SIGNALS = {"envelope": "header and trailer", "tokens": "signals"}


def payload_messages(link: Link) -> int:
    """How many messages the payload makes: exact for messages and envelopes (chunks, a
    header and a trailer), at most for tokens."""
    config = link.payload_config
    if isinstance(config, MessagesConfig):
        return config.message_count
    if isinstance(config, EnvelopeConfig):
        return -(-config.records // config.chunk_records) + 2
    if isinstance(config, McpConfig):  # each call's progress and response, and the set-up's
        return config.calls * (config.steps + 1) + 2
    signals = RESPONSES_SIGNALS if config.profile == "openai-responses" else TOKEN_SIGNALS
    thinking = THINKING_MESSAGES if config.thinking else 0
    return config.count + signals + thinking + config.tools * TOOL_CALL_MESSAGES


def payload_size(link: Link) -> int:
    """Bytes of the payload's messages: exact for ``messages``, about for the others."""
    config = link.payload_config
    if isinstance(config, MessagesConfig):
        return config.payload_bytes
    if isinstance(config, EnvelopeConfig):
        return config.records * ENVELOPE_RECORD_BYTES
    if isinstance(config, McpConfig):
        return payload_messages(link) * MCP_MESSAGE_BYTES
    return config.count * TOKEN_BYTES + config.tools * TOOL_CALL_BYTES


@dataclass(frozen=True, slots=True)
class CountRange:
    """An inclusive range of counts."""

    min: Count = 0
    max: Count | None = None

    def __post_init__(self) -> None:
        if self.max is not None and self.max < self.min:
            raise FieldError(f"must be >= min ({self.min}) (got {self.max})", path=("max",))


Strictness = Literal["strict", "informational"]


@dataclass(frozen=True, slots=True)
class Grading:
    """How a consumer other than the reference one is held to each key of ``expect``
    (``docs/grades.md``). Left out, a key follows the default rules: a missed verdict or count
    is ``non-strict`` when the consumer surfaced the failure, a complete claim the case cannot
    disprove is informational, and anything else missed fails. What the expectation needs the
    consumer to be given is derived from the case (``harness.judging.needs``), never written."""

    #: the expected verdict
    verdict: Strictness | None = None
    #: the expected completeness (e.g. informational for a close-delimited body, which no
    #: client can prove complete either way)
    complete: Strictness | None = None
    #: the expected count of accepted messages
    accepted_messages: Strictness | None = None

    def is_informational(self, key: str) -> bool:
        return bool(getattr(self, key, None) == "informational")


@dataclass(frozen=True, slots=True)
class SessionExpect:
    """What an MCP session (payload mcp) must end with; the session's invariants are judged
    from the wire whatever it says (docs/mcp.md)."""

    #: ``answered``: every tool call returned its result; ``error``: the client ended with an
    #: error it raised or reported (never a hang)
    outcome: Literal["answered", "error"] = "answered"
    #: with outcome error, the reference client's error code (a client adapter's errors are
    #: its library's, and not compared)
    error: McpError | None = None
    #: exactly what the session checker must find on the wire with the reference client (a
    #: misbehaving server's replay: DUPLICATE_EVENT, GAP, FOREIGN_EVENT, DUPLICATE_RESPONSE),
    #: in order
    findings: tuple[McpFinding, ...] = ()
    #: how many times the server ran the tool (default: once per call, never twice)
    executions: Count | None = None

    def __post_init__(self) -> None:
        if self.error is not None and self.outcome != "error":
            raise FieldError("only with outcome error", path=("error",))


@dataclass(frozen=True, slots=True)
class Expect:
    """What the consumer must end with; at least one key is required."""

    #: the one verdict or error code the consumer must reach
    verdict: Verdict | None = None
    #: or one of several (not together with verdict)
    any_of: Annotated[tuple[Verdict, ...], MinLen(1)] | None = None
    #: whether the consumer claimed a complete result
    complete: bool | None = None
    #: how many messages the consumer accepted: exactly, or within {min, max}
    accepted_messages: Count | CountRange | None = None
    #: how a consumer other than the reference one is held to each key (docs/grades.md)
    grading: Grading = Grading()
    #: what an MCP session must end with (only with payload mcp, and then alone)
    session: SessionExpect | None = None

    def __post_init__(self) -> None:
        if self.verdict is not None and self.any_of is not None:
            raise FieldError("give either verdict or any_of, not both", path=("any_of",))
        stream_keys = (self.verdict, self.any_of, self.complete, self.accepted_messages)
        if self.session is not None and stream_keys != (None,) * 4:
            raise FieldError("session goes alone: an MCP session has no verdict of a stream")
        if stream_keys == (None,) * 4 and self.session is None:
            raise FieldError("give at least one of verdict, any_of, complete, accepted_messages")


#: sweep range ends: any value a key of ours can hold, seeds included
SweepBound = Annotated[int, Ge(-MAX_SEED), Le(MAX_SEED)]


@dataclass(frozen=True, slots=True)
class Span:
    """An integer sweep axis: from ``from`` (inclusive) to ``to`` (exclusive) by ``step``.
    ``to: end`` is the length of the stream, so ``{from: 0, to: end}`` visits every byte."""

    start: SweepBound = field(metadata=yaml_key("from"))
    stop: SweepBound | Literal["end"] = field(metadata=yaml_key("to"))
    #: distance between two values
    step: Annotated[int, Ge(1), Le(MAX_SEED)] = 1

    def __post_init__(self) -> None:
        if self.stop != "end" and self.stop <= self.start:
            raise FieldError(
                f"must be > from ({self.start}), else the range is empty (got {self.stop})",
                path=("to",),
            )

    def size(self, end: int) -> int:
        """How many values, without making them (a range can be far too long to count)."""
        stop = end if self.stop == "end" else self.stop
        return max(0, -(-(stop - self.start) // self.step))

    def values(self, end: int) -> range:
        """The concrete values, ``end`` standing for ``to: end``."""
        return range(self.start, end if self.stop == "end" else self.stop, self.step)


@dataclass(frozen=True, slots=True)
class SweepAxis:
    """One key of ``sweep``: a key path of the scenario and the values it takes, in order."""

    #: the key path as written, e.g. ``faults[0].at.offset``
    path: str
    parts: KeyPath
    values: tuple[object, ...] | Span
    #: where the axis is written
    line: int = 0


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a scenario was written."""

    file: str
    line: int


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario: a link, the faults injected into it, and what the consumer must conclude."""

    #: unique in its file; part of every case id
    name: ScenarioName
    #: what this scenario proves, in one sentence
    description: Annotated[str, MinLen(1)]
    link: Link
    expect: Expect
    #: where the case comes from (seed section, catalogue case)
    source: str | None = None
    #: faults injected by the proxy, in order
    faults: FaultList = ()
    #: axes to run the scenario across (read by harness.scenario.sweep)
    sweep: tuple[SweepAxis, ...] = field(default=(), metadata=CUSTOM)
    #: seed of the case's random choices (default: derived from the case id)
    seed: Annotated[int, Ge(0), Le(MAX_SEED)] | None = None
    #: time limit of each case, in milliseconds
    deadline_ms: Millis = 10000.0
    #: run each case alone, after all the others, when its verdict hangs on tight timing that a
    #: loaded machine could disturb (a few hundred milliseconds against a stall, say)
    exclusive: bool = False
    #: the version of the scenario format the file is written in (in a list, said by its first
    #: scenario); when not given, its folder's ``tearline.yaml`` says, else it is read as the
    #: current version (the loader's, harness.scenario.versions)
    format: int | None = field(default=None, metadata=CUSTOM)
    origin: Origin | None = field(default=None, metadata=INTERNAL)

    def __post_init__(self) -> None:
        mcp = self.link.payload == "mcp"
        if mcp != (self.expect.session is not None):
            message = "payload mcp is judged by expect.session, and only it is"
            raise FieldError(message, path=("expect", "session" if mcp else "verdict"))
        for index, fault in enumerate(self.faults):
            if fault.request is not None and not mcp:
                message = "only on an MCP session (payload mcp): its exchanges carry requests"
                raise FieldError(message, path=("faults", index, "request"))
            problem = heartbeat_problem(getattr(fault, "heartbeat", None), self.link.framing)
            if problem is not None:
                raise FieldError(problem, path=("faults", index, "heartbeat"))
