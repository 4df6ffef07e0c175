"""Payloads: the application streams that ride on a framing (messages, envelope, tokens), and
``mcp``, a link that is an MCP session (``reference_impl/mcp/``: no stream of messages of its own).

Each payload module has a producer side that makes deterministic frames lazily and a consumer
side that checks whole frames as they arrive. All of them are sans-IO.
"""

from enum import StrEnum


class PayloadName(StrEnum):
    MESSAGES = "messages"
    ENVELOPE = "envelope"
    TOKENS = "tokens"
    MCP = "mcp"


PAYLOAD_NAMES: tuple[str, ...] = tuple(PayloadName)
