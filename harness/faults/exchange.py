"""Which exchange of a session a fault acts on: ``request`` instead of a connection number.

An MCP session is many HTTP exchanges, one connection each with tearline's server, and a
real client opens connections of its own (a GET stream for server messages, at a moment of
its choosing), so a connection number names different exchanges from one run to the next.
``request`` names the exchange by what it carries instead, and is resolved on the live
session as each request arrives (``harness/link/exchanges.py``), never predicted:

- ``method``: the POST whose JSON-RPC body holds a message with this method
  (``tools/call``, ``notifications/initialized``);
- ``id``: the POST whose body holds the request with this JSON-RPC id;
- ``http``: ``GET`` (the stream for server messages: a GET that resumes nothing) or
  ``DELETE`` (the session's end);
- ``nth``: the nth such exchange, counted from 1 in the order their requests arrived (a
  request sent again, after a lost session, is the second);
- ``resume``: not that exchange but the nth resume of its stream (a GET whose
  ``Last-Event-ID`` names an event of it, or of an earlier resume of it).

Positions (``at``, ``frame``) then count in that exchange's own bytes, as they count in a
connection's: ``frame: 2`` is the second event of its answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from harness.config.checks import check_fields
from harness.config.constraints import Ge, Le, MinLen
from harness.config.limits import MAX_COUNT
from harness.errors import FieldError

HttpExchange = Literal["GET", "DELETE"]
SELECTORS = ("method", "id", "http")


@dataclass(frozen=True, slots=True)
class ExchangeSelector:
    """One exchange of a session, by what its request carries (see the module docstring)."""

    #: a JSON-RPC method the POST's body holds
    method: Annotated[str, MinLen(1)] | None = None
    #: a JSON-RPC request id the POST's body holds
    id: Annotated[int, Ge(0), Le(MAX_COUNT)] | Annotated[str, MinLen(1)] | None = None
    #: GET (the stream for server messages) or DELETE (the session's end)
    http: HttpExchange | None = None
    #: the nth exchange that matches, counted from 1
    nth: Annotated[int, Ge(1), Le(MAX_COUNT)] = 1
    #: the nth resume of that exchange's stream, counted from 1 (None: the exchange itself)
    resume: Annotated[int, Ge(1), Le(MAX_COUNT)] | None = None

    def __post_init__(self) -> None:
        given = [name for name in SELECTORS if getattr(self, name) is not None]
        if len(given) != 1:
            got = f" (got {', '.join(given)})" if given else ""
            raise FieldError(f"give exactly one of {', '.join(SELECTORS)}{got}")
        check_fields(self)

    def describe(self) -> str:
        """A few words for timelines and diagnoses: ``the 2nd tools/call``, ``its resume 1``."""
        if self.method is not None:
            what = self.method
        elif self.id is not None:
            what = f"request id {self.id!r}"
        else:
            what = f"{self.http} exchange"
        head = f"{what}" if self.nth == 1 else f"{what} #{self.nth}"
        return head if self.resume is None else f"resume {self.resume} of {head}"
