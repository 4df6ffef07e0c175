"""The MCP layer's one error: a code (compared by tests and the judge) and a detail."""

from __future__ import annotations

from enum import StrEnum


class McpErrorCode(StrEnum):
    BAD_JSON = "BAD_JSON"  # a body or an event that is not JSON
    BAD_MESSAGE = "BAD_MESSAGE"  # JSON that is no JSON-RPC 2.0 message
    BAD_ANSWER = "BAD_ANSWER"  # an HTTP answer no client can read (status, content type)
    STREAM_CUT = "STREAM_CUT"  # the answer's stream ended before the request's response
    SESSION_LOST = "SESSION_LOST"  # the server answered 404 to the session's id
    HTTP_STATUS = "HTTP_STATUS"  # the server answered with another error status
    STALLED = "STALLED"  # no byte of an answer for longer than the client waits
    CONNECT_FAILED = "CONNECT_FAILED"  # the server could not be reached


class McpError(Exception):
    """Something a peer sent breaks the transport's rules; ``code`` says which."""

    def __init__(self, code: McpErrorCode, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else str(code))
        self.code = code
        self.detail = detail
