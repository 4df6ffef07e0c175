"""A session's exchanges as they arrive, for faults that name a request (pure).

The proxy hands this every read of every leg before any fault sees it. Each connection's
request is decoded as it comes (``reference_impl/mcp/wire.py``); once it is whole the
connection becomes an ``Exchange``: its HTTP method, the JSON-RPC methods and ids its body
holds, and, for a GET with ``Last-Event-ID``, the exchange whose stream it resumes (found from
the event ids that exchange's answers carried, whatever form the server gives its ids). A
fault's ``request`` (``harness/faults/exchange.py``) is then matched against the exchanges in
the order their requests became whole: the live session, never a prediction.

One exchange per connection: tearline's server closes each connection after its answer (so
does the reference client). A connection that carries more than one request is placed by its
first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.faults.exchange import ExchangeSelector
from harness.faults.items import Direction
from reference_impl.errors import CodecError
from reference_impl.framing.http1 import Received
from reference_impl.framing.request import Request as HttpRequest
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.errors import McpError
from reference_impl.mcp.wire import ClientExchange, Delivered, Primed, ServerExchange


@dataclass(frozen=True, slots=True)
class Exchange:
    """One connection's request, once whole."""

    number: int
    http: str
    methods: tuple[str, ...] = ()
    ids: tuple[jsonrpc.RequestId, ...] = ()
    last_event_id: str | None = None
    #: the connection of the exchange whose stream this resumes (itself when no resume;
    #: None for a resume of an event no answer carried)
    root: int | None = None
    #: 0: no resume; k: the kth resume of ``root``'s stream
    resume: int = 0

    def matches(self, selector: ExchangeSelector) -> bool:
        """Whether this exchange (a first answer, not a resume) is what ``selector`` names."""
        if selector.method is not None:
            return selector.method in self.methods
        if selector.id is not None:  # 3 is not "3", nor is True 1
            return any(type(i) is type(selector.id) and i == selector.id for i in self.ids)
        return self.http == selector.http and self.last_event_id is None


@dataclass(slots=True)
class _Pending:
    """A connection whose request is still arriving, or whose answer is being read."""

    request: ServerExchange = field(default_factory=ServerExchange)
    answer: ClientExchange | None = None
    broken: bool = False


@dataclass(slots=True)
class SessionExchanges:
    #: connection -> its exchange, once its request was whole
    exchanges: dict[int, Exchange] = field(default_factory=dict)
    #: connections in the order their requests became whole
    order: list[int] = field(default_factory=list)
    #: event id -> the connection of the exchange whose stream carried it (first answer)
    event_roots: dict[str, int] = field(default_factory=dict)
    #: root connection -> resumes of its stream so far
    resumes: dict[int, int] = field(default_factory=dict)
    _pending: dict[int, _Pending] = field(default_factory=dict)

    def observe(self, direction: Direction, number: int, data: bytes) -> bool:
        """One read of connection ``number``'s leg ``direction``; True when it made the
        connection's request whole (the faults that name it may now apply)."""
        pending = self._pending.setdefault(number, _Pending())
        if pending.broken:
            return False
        if direction == "downstream":
            self._answer(number, pending, data)
            return False
        if number in self.exchanges:
            return False
        try:
            got = pending.request.receive_data(data)
        except CodecError:  # no HTTP request: no exchange any request names
            pending.broken = True
            return False
        if not isinstance(got, Received):
            pending.broken = got is not None  # refused (too large): placed by nothing
            return False
        self._arrived(number, pending, got)
        return True

    def selects(self, selector: ExchangeSelector, number: int) -> bool:
        """Whether connection ``number`` is the exchange ``selector`` names (False until its
        request is whole)."""
        exchange = self.exchanges.get(number)
        if exchange is None:
            return False
        roots = [
            self.exchanges[n]
            for n in self.order
            if not self.exchanges[n].resume and self.exchanges[n].matches(selector)
        ]
        if len(roots) < selector.nth:
            return False
        target = roots[selector.nth - 1]
        if selector.resume is None:
            return target.number == number
        return exchange.root == target.number and exchange.resume == selector.resume

    def _arrived(self, number: int, pending: _Pending, got: Received) -> None:
        messages = _messages(got)
        resumed = got.headers.get("last-event-id") if got.method == "GET" else None
        root: int | None = number
        resume = 0
        if resumed is not None:
            root = self.event_roots.get(resumed)
            if root is not None:
                resume = self.resumes[root] = self.resumes.get(root, 0) + 1
        self.exchanges[number] = Exchange(
            number,
            got.method,
            tuple(
                m.method for m in messages if isinstance(m, jsonrpc.Request | jsonrpc.Notification)
            ),
            tuple(m.id for m in messages if isinstance(m, jsonrpc.Request)),
            resumed,
            root,
            resume,
        )
        self.order.append(number)
        pending.answer = ClientExchange(batches=True)
        pending.answer.request(HttpRequest(got.method, got.target), got.method)

    def _answer(self, number: int, pending: _Pending, data: bytes) -> None:
        """The event ids of an answer: each belongs to the stream its exchange resumes."""
        exchange = self.exchanges.get(number)
        if pending.answer is None or exchange is None or exchange.root is None:
            return
        for item in pending.answer.receive_data(data):
            if isinstance(item, Primed | Delivered) and item.event_id:
                self.event_roots.setdefault(item.event_id, exchange.root)


def _messages(got: Received) -> list[jsonrpc.Message]:
    if got.method != "POST":
        return []
    try:
        return jsonrpc.decode(got.body, batches=True)
    except McpError:
        return []
