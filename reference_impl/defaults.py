"""The one set of defaults of a link, for every way a link is described.

A scenario file that leaves a key out, ``tearline demo|produce|consume`` without the option,
and code that builds a ``LinkSpec``/``ConsumerConfig`` without the argument all get these values
(``docs/reference-link.md``, "Defaults"). They are the scenario library's values: the library's
outcomes are written against them.
"""

from __future__ import annotations

#: where tearline's own pieces of a link listen by default (the producer, the proxy) and where
#: its consumers connect: the loopback interface
LOOPBACK = "127.0.0.1"
#: ``messages`` payload: how many generated messages, and the size of each
MESSAGE_COUNT = 5
MESSAGE_BYTES = 64
#: ``envelope`` payload: records, and records per chunk (B of seed 001)
ENVELOPE_RECORDS = 200
ENVELOPE_CHUNK_RECORDS = 50
#: ``tokens`` payload: the producer profile and how many tokens
TOKEN_PROFILE = "openai"
TOKEN_COUNT = 30
#: the most tool calls a token stream makes (each is a dozen or so frames)
MAX_TOOL_CALLS = 100
#: the largest message a codec accepts
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: the consumer: a partial message older than this is stale (seed 000); the wait at a boundary
INCOMPLETE_MESSAGE_TIMEOUT_S = 1.0
IDLE_TIMEOUT_S = 5.0
#: bytes the consumer asks for per read
READ_BYTES = 65536
#: what the reference consumer asks for (SSE/WebSocket request target, gRPC method path)
REQUEST_PATH = "/stream"
#: the largest request body a link may send (and the reference producer reads), and the most
#: headers a request may add
MAX_REQUEST_BODY_BYTES = 1 << 20
MAX_REQUEST_HEADERS = 64
#: C_cap of seed 001: chunks the producer may hold for a slow consumer
CHANNEL_CAPACITY_CHUNKS = 2
