"""The spec versions the reference peers speak, what each one changes, and the server's modes.

- ``2025-03-26``: a POST may carry a JSON-RPC batch.
- ``2025-06-18``: no batches; after initialization every request carries
  ``MCP-Protocol-Version``.
- ``2025-11-25``: as 2025-06-18, and a POST's stream opens with a priming event (an id and an
  empty ``data``, with ``retry``) so that a stream the server closes early can be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SpecVersion = Literal["2025-03-26", "2025-06-18", "2025-11-25"]
SPEC_VERSIONS: tuple[SpecVersion, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST: SpecVersion = "2025-11-25"

#: how the server answers a POST that holds requests: one JSON body, or an SSE stream
AnswerMode = Literal["json", "sse"]

#: ways the reference server misbehaves on purpose, so that a client's defences are tested
#: - ``duplicate-on-replay``: a resumed stream repeats the event the client resumed after
#: - ``drop-on-replay``: a resumed stream skips the first event the client missed
#: - ``replay-other-streams``: a resumed stream carries the events of the session's other
#:   streams too
#: - ``lose-final-response``: a tool call's stream ends without its response, in replay too
#: - ``forget-session``: the session is forgotten once initialized (every later request: 404)
ServerMode = Literal[
    "correct",
    "duplicate-on-replay",
    "drop-on-replay",
    "replay-other-streams",
    "lose-final-response",
    "forget-session",
]
SERVER_MODES: tuple[ServerMode, ...] = (
    "correct",
    "duplicate-on-replay",
    "drop-on-replay",
    "replay-other-streams",
    "lose-final-response",
    "forget-session",
)

MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
DEFAULT_RETRY_MS = 1000


def allows_batches(version: SpecVersion) -> bool:
    return version == "2025-03-26"


def sends_version_header(version: SpecVersion) -> bool:
    return version != "2025-03-26"


def primes_streams(version: SpecVersion) -> bool:
    return version == "2025-11-25"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What the reference server speaks and how it behaves."""

    version: SpecVersion = LATEST
    answer: AnswerMode = "sse"
    mode: ServerMode = "correct"
    #: ``retry`` of the priming event (2025-11-25), in milliseconds
    retry_ms: int = DEFAULT_RETRY_MS
    #: close a tool call's stream (without ending it) after this many events, the priming
    #: event included (0: right after the head); the rest waits in the session's log for a
    #: resume (None: never)
    close_after_events: int | None = None
