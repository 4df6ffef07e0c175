"""What the framings over HTTP/1.1 share (SSE, NDJSON over HTTP), on h11. Pure.

- The consumer's request as bytes (``request_bytes``): the link's ``Request`` with ``Host``, the
  ``Accept`` the framing wants (unless the request names one), ``Content-Length`` for a body,
  and whatever the framing adds (``Last-Event-ID``).
- The producer's reading of a request (``RequestReader``): its head and its body, the body
  bounded (``MAX_REQUEST_BODY_BYTES``: a larger one is refused with 413), and its refusal as
  an answer (``refusal_bytes``) when the route does not serve it.
- The consumer's reading of an answer that is not 2xx (``ErrorAnswer``): the status and the
  first bytes of the body go into the error (``HTTP_STATUS``), as the first thing a user needs
  to see is what the service said.
"""

from __future__ import annotations

from dataclasses import dataclass

import h11

from reference_impl import defaults
from reference_impl.errors import CodecError, ErrorCode
from reference_impl.framing.request import Refusal, Request, Route, refusal

#: the largest request body the reference producer reads
MAX_REQUEST_BODY_BYTES = defaults.MAX_REQUEST_BODY_BYTES
#: how much of an error answer's body the error quotes
ERROR_BODY_SHOWN = 200


def request_bytes(
    conn: h11.Connection,
    request: Request,
    method: str,
    accept: str,
    extra: tuple[tuple[str, str], ...] = (),
) -> bytes:
    """The request, whole (head and body), as ``conn`` writes it; ``ValueError`` for one h11
    refuses to write."""
    headers = [("Host", request.authority)]
    if request.header("accept") is None:
        headers.append(("Accept", accept))
    headers += [*request.headers, *extra]
    if request.body:
        headers.append(("Content-Length", str(len(request.body))))
    try:
        out = conn.send(
            h11.Request(
                method=method,
                target=request.path,
                headers=[(name.encode(), value.encode("utf-8")) for name, value in headers],
            )
        )
        if request.body:
            out += conn.send(h11.Data(data=request.body))
        return out + conn.send(h11.EndOfMessage())
    except h11.LocalProtocolError as exc:
        raise ValueError(f"cannot send the request: {exc}") from None


@dataclass(frozen=True, slots=True)
class Received:
    """A request the producer read whole."""

    method: str
    target: str
    #: lower-case name -> value (the first, if repeated)
    headers: dict[str, str]
    body: bytes

    def refusal(self, route: Route) -> Refusal | None:
        return refusal(route, self.method, self.target, self.headers.get("content-type"), self.body)


class RequestReader:
    """The producer's side of one request: feed bytes, get the request once it is whole."""

    def __init__(self, conn: h11.Connection, limit: int = MAX_REQUEST_BODY_BYTES) -> None:
        self._conn, self._limit = conn, limit
        self._head: h11.Request | None = None
        self._body = bytearray()

    def feed(self, data: bytes) -> Received | Refusal | None:
        """The whole request, a refusal of one that is too large, or None until then.
        ``CodecError(PROTOCOL_ERROR)`` for bytes that are no HTTP/1.1 request."""
        self._conn.receive_data(data)
        while True:
            try:
                event = self._conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise CodecError(ErrorCode.PROTOCOL_ERROR, f"HTTP request: {exc}") from None
            if isinstance(event, h11.Request):
                self._head = event
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self._limit:
                    message = f"the body is over {self._limit} bytes"
                    return Refusal(413, "Content Too Large", message)
            elif isinstance(event, h11.EndOfMessage):
                return self._received()
            else:  # NEED_DATA, PAUSED, ConnectionClosed: nothing whole yet
                return None

    def _received(self) -> Received:
        assert self._head is not None
        headers: dict[str, str] = {}
        try:
            for name, value in self._head.headers:
                headers.setdefault(name.decode("ascii").lower(), value.decode("utf-8"))
        except UnicodeDecodeError:
            raise CodecError(ErrorCode.PROTOCOL_ERROR, "request header is not UTF-8") from None
        method, target = self._head.method.decode("ascii"), self._head.target.decode("ascii")
        return Received(method, target, headers, bytes(self._body))


def refusal_bytes(conn: h11.Connection, answer: Refusal) -> bytes:
    """The refusal as a whole answer with its JSON error body; the connection closes after."""
    body = answer.body
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    ]
    if answer.allow is not None:
        headers.append(("Allow", answer.allow))
    response = h11.Response(status_code=answer.status, reason=answer.reason, headers=headers)
    return conn.send(response) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())


class ErrorAnswer:
    """The consumer's side of an answer that is not 2xx: the first bytes of its body, then
    the error that names it (when the body ends, or enough of it is in)."""

    def __init__(self, response: h11.Response) -> None:
        reason = response.reason.decode("latin-1")
        self._status = f"{response.status_code} {reason}".strip()
        self._body = bytearray()

    def feed(self, data: bytes) -> None:
        """Body bytes; ``CodecError(HTTP_STATUS)`` once enough are in to quote."""
        self._body += data[: ERROR_BODY_SHOWN + 1 - len(self._body)]
        if len(self._body) > ERROR_BODY_SHOWN:
            raise self.error()

    def error(self) -> CodecError:
        """The error: ``HTTP_STATUS``, with the status and the body's first bytes."""
        shown = bytes(self._body[:ERROR_BODY_SHOWN]).decode("utf-8", "replace")
        more = "…" if len(self._body) > ERROR_BODY_SHOWN else ""
        body = f": {shown!r}{more}" if shown else " (no body)"
        return CodecError(ErrorCode.HTTP_STATUS, f"the service answered {self._status}{body}")
