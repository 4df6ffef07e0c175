"""Toxiproxy's routes and the wire form of its answers: pure.

``match(method, path)`` is gorilla/mux as Toxiproxy configures it: an unclean path (``//x``,
``/a/../b``) is a 301 to the cleaned one, a path no route has is a plain-text 404, a known path
with another method is an empty 405, path variables are one segment each (percent-decoded
before matching, so ``%2F`` matches nothing). ``render(reply, request_id)`` gives the status,
the headers and the body of an answer, framed as Go's ``net/http`` frames it: up to 2048 bytes
with a Content-Length, longer ones chunked.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from harness.control.gojson import Encodable, encode

#: Go's net/http buffers this much of a body before it falls back to chunked encoding
CHUNKING_ABOVE = 2048

Handler = str


@dataclass(frozen=True, slots=True)
class Route:
    pattern: tuple[str, ...]  # segments; "{name}" is a variable
    methods: dict[str, Handler]
    #: any method (Prometheus' handler)
    any_method: Handler | None = None


ROUTES: tuple[Route, ...] = (
    Route(("reset",), {"POST": "reset"}),
    Route(("proxies",), {"GET": "proxy_index", "POST": "proxy_create"}),
    Route(("populate",), {"POST": "populate"}),
    Route(
        ("proxies", "{proxy}"),
        {
            "GET": "proxy_show",
            "POST": "proxy_update",
            "PATCH": "proxy_update",
            "DELETE": "proxy_delete",
        },
    ),
    Route(("proxies", "{proxy}", "toxics"), {"GET": "toxic_index", "POST": "toxic_create"}),
    Route(
        ("proxies", "{proxy}", "toxics", "{toxic}"),
        {
            "GET": "toxic_show",
            "POST": "toxic_update",
            "PATCH": "toxic_update",
            "DELETE": "toxic_delete",
        },
    ),
    Route(("version",), {"GET": "version"}),
    Route(("metrics",), {}, any_method="metrics"),
    # tearline's own: which fault fired where, per connection
    Route(("events",), {"GET": "events"}),
    Route(("proxies", "{proxy}", "events"), {"GET": "proxy_events"}),
)


@dataclass(frozen=True, slots=True)
class Matched:
    handler: Handler
    params: dict[str, str]


@dataclass(frozen=True, slots=True)
class RouterReply:
    """An answer of the router itself: no route ran (no request id, no browser check)."""

    status: Literal[301, 404, 405]
    location: str = ""


def clean_path(path: str) -> str:
    """gorilla/mux's ``cleanPath``: Go's ``path.Clean``, keeping a trailing slash."""
    if not path:
        return "/"
    if not path.startswith("/"):
        path = "/" + path
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    cleaned = "/" + "/".join(parts)
    if path.endswith("/") and cleaned != "/":
        cleaned += "/"
    return cleaned


def match(method: str, path: str, query: str = "") -> Matched | RouterReply:
    cleaned = clean_path(path)
    if cleaned != path:
        return RouterReply(301, cleaned + (f"?{query}" if query else ""))
    segments = tuple(path.split("/")[1:])
    known_path = False
    for route in ROUTES:
        params = _bind(route.pattern, segments)
        if params is None:
            continue
        known_path = True
        if route.any_method is not None:
            return Matched(route.any_method, params)
        if method in route.methods:
            return Matched(route.methods[method], params)
    return RouterReply(405 if known_path else 404)


def _bind(pattern: tuple[str, ...], segments: tuple[str, ...]) -> dict[str, str] | None:
    if len(pattern) != len(segments):
        return None
    params: dict[str, str] = {}
    for want, got in zip(pattern, segments, strict=True):
        if want.startswith("{"):
            if not got:
                return None
            params[want[1:-1]] = got
        elif want != got:
            return None
    return params


# -- answers ----------------------------------------------------------------------------------
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Reply:
    """What a handler answers. ``kind`` decides the framing:

    - ``json``: 2xx, ``application/json``, no trailing newline (Go's ``json.Marshal``)
    - ``error``: Go's ``http.Error``: the JSON error body plus a newline, as plain text
    - ``populate``: ``application/json`` whatever the status, no newline
    - ``version``: ``application/json;charset=utf-8``, the body as given
    - ``empty``: 204
    - ``text``: plain text (the browser refusal), or ``content_type`` for metrics
    """

    status: int
    kind: Literal["json", "error", "populate", "version", "empty", "text"]
    value: Encodable = None
    text: str = ""
    content_type: str = ""


@dataclass(frozen=True, slots=True)
class Wire:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    chunked: bool = False


def render(reply: Reply | RouterReply, request_id: str | None) -> Wire:
    """The status, headers (Go's order: sorted, then Date and the framing, which the server
    adds) and body of ``reply``."""
    if isinstance(reply, RouterReply):
        if reply.status == 301:
            return Wire(301, [("Location", reply.location)], b"")
        if reply.status == 404:
            headers = [("Content-Type", TEXT), ("X-Content-Type-Options", "nosniff")]
            return Wire(404, headers, b"404 page not found\n")
        return Wire(405, [], b"")
    ident = [("X-Toxiproxy-Request-Id", request_id)] if request_id else []
    if reply.kind == "empty":
        return Wire(reply.status, ident, b"", chunked=False)
    if reply.kind == "error":
        body = (encode(reply.value) + "\n").encode()
        headers = [("Content-Type", TEXT), ("X-Content-Type-Options", "nosniff"), *ident]
    elif reply.kind == "text":
        body = reply.text.encode()
        if reply.content_type:
            headers = [("Content-Type", reply.content_type), *ident]
        else:
            headers = [("Content-Type", TEXT), ("X-Content-Type-Options", "nosniff"), *ident]
    elif reply.kind == "version":
        body = reply.text.encode()
        headers = [("Content-Type", "application/json;charset=utf-8"), *ident]
    else:
        body = encode(reply.value).encode()
        headers = [("Content-Type", JSON), *ident]
    return Wire(reply.status, headers, body, chunked=len(body) > CHUNKING_ABOVE)


def error(status: int, message: str) -> Reply:
    return Reply(status, "error", {"error": message, "status": status})


# -- X-Toxiproxy-Request-Id ---------------------------------------------------------------------


@dataclass
class RequestIds:
    """Ids in rs/xid's form, as Toxiproxy makes them: 4 bytes of time, 3 of machine, 2 of
    process, 3 of a counter, in 20 characters of lower-case base32hex (they sort by time)."""

    machine: bytes = field(default_factory=lambda: os.urandom(3))
    pid: int = field(default_factory=os.getpid)
    counter: int = field(default_factory=lambda: int.from_bytes(os.urandom(3), "big"))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, now: float | None = None) -> str:
        with self._lock:
            self.counter = (self.counter + 1) & 0xFFFFFF
            count = self.counter
        seconds = int(time.time() if now is None else now) & 0xFFFFFFFF
        raw = (
            seconds.to_bytes(4, "big")
            + self.machine
            + (self.pid & 0xFFFF).to_bytes(2, "big")
            + count.to_bytes(3, "big")
        )
        # base32hex from the first bit, the last digit padded with zeros: 20 digits
        return base64.b32hexencode(raw)[:20].decode().lower()


__all__ = ["ROUTES", "Matched", "Reply", "RequestIds", "RouterReply", "Wire", "match", "render"]
