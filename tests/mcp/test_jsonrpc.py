"""JSON-RPC 2.0 messages: what goes out reads back, and what is no message is said by code."""

from __future__ import annotations

import pytest

from reference_impl.mcp import jsonrpc
from reference_impl.mcp.errors import McpError, McpErrorCode
from reference_impl.mcp.jsonrpc import ErrorResponse, Notification, Request, Response

MESSAGES: list[jsonrpc.Message] = [
    Request(1, "tools/call", {"name": "work", "arguments": {"steps": 2}}),
    Request("a", "ping"),
    Notification("notifications/initialized"),
    Notification("notifications/progress", {"progressToken": 3, "progress": 1}),
    Response(7, {"tools": []}),
    ErrorResponse(7, -32601, "no such method"),
    ErrorResponse(None, -32700, "parse error"),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_message_reads_back(message: jsonrpc.Message) -> None:
    assert jsonrpc.decode(jsonrpc.encode(message)) == [message]


def test_the_wire_form_is_compact_json() -> None:
    assert jsonrpc.encode(Request(1, "ping")) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert jsonrpc.encode(Response(1, {})) == b'{"jsonrpc":"2.0","id":1,"result":{}}'


def test_a_batch_only_where_allowed() -> None:
    batch = jsonrpc.encode([Request(1, "ping"), Notification("x")])
    assert jsonrpc.decode(batch, batches=True) == [Request(1, "ping"), Notification("x")]
    with pytest.raises(McpError) as caught:
        jsonrpc.decode(batch)
    assert caught.value.code is McpErrorCode.BAD_MESSAGE
    with pytest.raises(McpError) as empty:
        jsonrpc.decode(b"[]", batches=True)
    assert empty.value.code is McpErrorCode.BAD_MESSAGE


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{", McpErrorCode.BAD_JSON),
        (b"\xff", McpErrorCode.BAD_JSON),
        (b'{"id":1,"method":"x"}', McpErrorCode.BAD_MESSAGE),  # no "jsonrpc": "2.0"
        (b'{"jsonrpc":"2.0","id":true,"method":"x"}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0","id":null,"method":"x"}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0","id":1.5,"result":{}}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0","method":3}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0","method":"x","params":[1]}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0"}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0","id":1}', McpErrorCode.BAD_MESSAGE),
        (b'{"jsonrpc":"2.0","id":null,"result":{}}', McpErrorCode.BAD_MESSAGE),
        (b"3", McpErrorCode.BAD_MESSAGE),
    ],
)
def test_what_is_no_message(data: bytes, code: McpErrorCode) -> None:
    with pytest.raises(McpError) as caught:
        jsonrpc.decode(data)
    assert caught.value.code is code
