"""JSON-RPC 2.0 messages as MCP sends them, and their JSON.

Four nouns: a ``Request`` (an id and a method), a ``Notification`` (a method, no id), a
``Response`` (the id and a result) and an ``ErrorResponse`` (the id, a code and a message; the
id is None when the request could not be read). ``decode`` reads one message or, where the
version allows (2025-03-26), a batch; anything else is ``McpError``, never a guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl.mcp.errors import McpError, McpErrorCode

RequestId = int | str
Params = Mapping[str, Any]

#: JSON-RPC's own error codes, and the ones MCP servers use
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: Params = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Params = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    result: Params


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    id: RequestId | None
    code: int
    message: str


Message = Request | Notification | Response | ErrorResponse
Answer = Response | ErrorResponse


def to_json(message: Message) -> dict[str, Any]:
    """The message as the JSON object that carries it."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(message, Request):
        out.update(id=message.id, method=message.method)
        if message.params:
            out["params"] = dict(message.params)
    elif isinstance(message, Notification):
        out["method"] = message.method
        if message.params:
            out["params"] = dict(message.params)
    elif isinstance(message, Response):
        out.update(id=message.id, result=dict(message.result))
    else:
        out.update(id=message.id, error={"code": message.code, "message": message.message})
    return out


def encode(message: Message | list[Message]) -> bytes:
    """Compact JSON, one line (an SSE ``data:`` line holds it whole)."""
    value: object = [to_json(m) for m in message] if isinstance(message, list) else to_json(message)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def decode(data: bytes, *, batches: bool = False) -> list[Message]:
    """The message (or, with ``batches``, the messages of a batch) in ``data``."""
    try:
        value = json.loads(data)
    except ValueError as err:  # UnicodeDecodeError too
        raise McpError(McpErrorCode.BAD_JSON, str(err)) from None
    if isinstance(value, list):
        if not batches:
            raise McpError(McpErrorCode.BAD_MESSAGE, "a batch, which this version does not allow")
        if not value:
            raise McpError(McpErrorCode.BAD_MESSAGE, "an empty batch")
        return [from_json(item) for item in value]
    return [from_json(value)]


def from_json(value: object) -> Message:
    """One JSON value as the message it is."""
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        raise McpError(McpErrorCode.BAD_MESSAGE, "not a JSON-RPC 2.0 object")
    has_id = "id" in value
    ident = value.get("id")
    if has_id and not _is_id(ident) and not (ident is None and "error" in value):
        raise McpError(McpErrorCode.BAD_MESSAGE, f"id {ident!r} is no string or integer")
    if "method" in value:
        method, params = value["method"], value.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            raise McpError(McpErrorCode.BAD_MESSAGE, "method must be a string, params an object")
        if not has_id:
            return Notification(method, params)
        if ident is None:
            raise McpError(McpErrorCode.BAD_MESSAGE, "a request's id may not be null")
        return Request(ident, method, params)
    if not has_id:
        raise McpError(McpErrorCode.BAD_MESSAGE, "neither a method nor an id")
    result, error = value.get("result"), value.get("error")
    if isinstance(result, dict) and ident is not None:
        return Response(ident, result)
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return ErrorResponse(ident, error["code"], str(error.get("message", "")))
    raise McpError(McpErrorCode.BAD_MESSAGE, "a response with neither a result nor an error")


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
