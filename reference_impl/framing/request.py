"""What a consumer asks for, and what the reference producer serves (pure).

A ``Request`` is what every agent API is called with: a method, a path, headers and a body. Each
framing sends what it means on it: an HTTP/1.1 request (SSE, NDJSON over HTTP), the WebSocket
upgrade's headers (its ``body``, if any, as the first message after the handshake), a gRPC
call's metadata and request message, or the body as raw bytes on a framed TCP stream. Its path,
headers and body may hold ``{host}`` and ``{port}``, filled in when the consumer connects
(``filled``); no other brace is touched, so a JSON body needs no escaping.

A ``Route`` is what the reference producer serves. It answers a request it does not serve as
the major APIs do (``refusal``): 404 for another path, 405 for another method, 415 for another
content type, 400 for a JSON body that does not parse, each with a JSON error body, so that a
scenario can hold a consumer to surfacing an HTTP error as an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from reference_impl import defaults

#: the placeholders a request may hold (in its text, and in its body's bytes)
PLACEHOLDER = re.compile(r"\{(host|port)\}")
_PLACEHOLDER_BYTES = re.compile(rb"\{(host|port)\}")
#: a header name (RFC 9110 token)
HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
#: what the proxy and the framings write themselves: a request may not set them
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "keep-alive",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-accept",
        "sec-websocket-extensions",
    }
)
JSON_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class Request:
    """What the consumer sends. ``method`` None: the framing's own (``method_for``)."""

    method: str | None = None
    path: str = defaults.REQUEST_PATH
    #: (name, value) pairs, in the order they are sent (a name may repeat)
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    #: the host (and port) the request names: HTTP's ``Host``, gRPC's ``:authority``
    authority: str = defaults.LOOPBACK

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), else None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    @property
    def content_type(self) -> str | None:
        """The media type of the body (``application/json``), without its parameters."""
        given = self.header("content-type")
        return None if given is None else given.split(";")[0].strip().lower()

    def method_for(self, framing: str) -> str:
        """What is sent: the method given; else what the protocol says (a WebSocket upgrade
        is a GET, a gRPC call a POST), POST where a body goes with it (as curl does with
        ``--data``), GET otherwise."""
        if framing == "websocket":
            return "GET"  # the body, if any, is the first message after the upgrade
        if self.method is not None:
            return self.method
        return "POST" if framing == "grpc" or self.body else "GET"

    def filled(self, host: str, port: int) -> Request:
        """The request with ``{host}`` and ``{port}`` replaced, naming ``host:port``."""
        values = {"host": host, "port": str(port)}
        named = f"[{host}]" if ":" in host else host

        def fill(text: str) -> str:
            return PLACEHOLDER.sub(lambda match: values[match.group(1)], text)

        body = _PLACEHOLDER_BYTES.sub(lambda m: values[m.group(1).decode()].encode(), self.body)
        return replace(
            self,
            path=fill(self.path),
            headers=tuple((name, fill(value)) for name, value in self.headers),
            body=body,
            authority=f"{named}:{port}",
        )


def parse_header(line: str) -> tuple[str, str]:
    """``Name: value`` (as curl's ``-H`` takes it) as a pair; ``ValueError`` saying what is
    wrong: no colon, a name that is not a token, a value with CR, LF or NUL, a header the
    framings write themselves."""
    name, colon, value = line.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name:
        raise ValueError(f"expected 'Name: value' (got {line!r})")
    if not HEADER_NAME.match(name):
        raise ValueError(f"{name!r} is not a header name")
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"the value of {name} holds CR, LF or NUL")
    if name.lower() in RESERVED_HEADERS:
        raise ValueError(f"{name} is written by the framing itself, not by the request")
    return name, value


@dataclass(frozen=True, slots=True)
class Route:
    """What the reference producer serves: a method (None: any), a path (the part before
    any ``?``), and the content type a body must have (None: any, or none)."""

    path: str = defaults.REQUEST_PATH
    method: str | None = None
    content_type: str | None = None

    @classmethod
    def of(cls, request: Request, framing: str) -> Route:
        """What serves ``request`` itself: its method, its path, its body's content type."""
        return cls(request.path.split("?")[0], request.method_for(framing), request.content_type)


@dataclass(frozen=True, slots=True)
class Refusal:
    """An answer instead of the stream: the status, and the JSON error body."""

    status: int
    reason: str
    message: str
    #: the method the path is served on (405's ``Allow``)
    allow: str | None = None

    @property
    def body(self) -> bytes:
        """The error as OpenAI's and Anthropic's APIs write theirs."""
        error = {"type": "invalid_request_error", "message": self.message, "code": self.status}
        return json.dumps({"error": error}).encode()


def refusal(
    route: Route, method: str, target: str, content_type: str | None, body: bytes
) -> Refusal | None:
    """How the reference producer refuses a request ``route`` does not serve; None: served."""
    path = target.split("?", maxsplit=1)[0]
    if path != route.path:
        return Refusal(404, "Not Found", f"no route {method} {path} (served: {route.path})")
    if route.method is not None and method != route.method:
        message = f"method {method} not allowed on {path} (use {route.method})"
        return Refusal(405, "Method Not Allowed", message, allow=route.method)
    given = None if content_type is None else content_type.split(";")[0].strip().lower()
    if route.content_type is not None and given != route.content_type:
        message = f"content type {given or 'none'} not supported (send {route.content_type})"
        return Refusal(415, "Unsupported Media Type", message)
    if given == JSON_TYPE:
        try:
            json.loads(body)
        except ValueError as err:  # UnicodeDecodeError too
            return Refusal(400, "Bad Request", f"the body is not JSON: {err}")
    return None
