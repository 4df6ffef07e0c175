"""What a client saw of a session, held to the transport's promises (pure).

The client tells the checker every request it sent, every message it received (with the id of
the event that carried it) and every request it gave up on with a typed error; ``violations``
then says what broke:

- ``NO_ANSWER``: a request got neither a response nor a typed error;
- ``DUPLICATE_RESPONSE``: a request got two answers (a replay that repeats one, say);
- ``UNKNOWN_ID``: a response for an id no request had (or an error with no id, none pending);
- ``REUSED_ID``: two requests of one session with one id;
- ``DUPLICATE_EVENT``: an event id seen twice in the session;
- ``GAP``: a stream skipped an event (ids of the reference server's form, ``<stream>-<seq>``,
  say where each event sits; other ids are checked for repeats only);
- ``FOREIGN_EVENT``: a resumed stream carried an event of another stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from reference_impl.mcp import jsonrpc
from reference_impl.mcp.streams import parse_event_id


class Violation(StrEnum):
    NO_ANSWER = "NO_ANSWER"
    DUPLICATE_RESPONSE = "DUPLICATE_RESPONSE"
    UNKNOWN_ID = "UNKNOWN_ID"
    REUSED_ID = "REUSED_ID"
    DUPLICATE_EVENT = "DUPLICATE_EVENT"
    GAP = "GAP"
    FOREIGN_EVENT = "FOREIGN_EVENT"


@dataclass(frozen=True, slots=True)
class Finding:
    violation: Violation
    #: the request id or event id it concerns
    subject: str


@dataclass(slots=True)
class SessionChecker:
    #: request id -> its method, in the order sent
    sent: dict[jsonrpc.RequestId, str] = field(default_factory=dict)
    #: request id -> how many answers (a response, an error response, a typed error given up)
    answers: dict[jsonrpc.RequestId, int] = field(default_factory=dict)
    seen_events: set[str] = field(default_factory=set)
    #: stream number -> the last seq seen on it
    positions: dict[int, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def new_session(self) -> None:
        """Event ids are unique per session: a new session starts their record afresh."""
        self.seen_events.clear()
        self.positions.clear()

    def request(self, request: jsonrpc.Request) -> None:
        if request.id in self.sent:
            self._find(Violation.REUSED_ID, request.id)
        self.sent[request.id] = request.method
        self.answers.setdefault(request.id, 0)

    def received(
        self, message: jsonrpc.Message, event_id: str = "", stream: int | None = None
    ) -> None:
        """A message, the id of its event ("" in a JSON body), and the stream the client was
        reading (a resume names the stream it asked for; None: whatever the event says)."""
        if event_id:
            self._event(event_id, stream)
        if isinstance(message, jsonrpc.Response | jsonrpc.ErrorResponse):
            self._answer(message.id)

    def primed(self, event_id: str, stream: int | None = None) -> None:
        self._event(event_id, stream)

    def gave_up(self, request_id: jsonrpc.RequestId) -> None:
        """The client ended the request with a typed error (an answer, of a kind)."""
        self._answer(request_id)

    def violations(self) -> list[Finding]:
        """Everything found so far, and every request still unanswered."""
        missing = [
            Finding(Violation.NO_ANSWER, str(ident))
            for ident, count in self.answers.items()
            if count == 0
        ]
        return [*self.findings, *missing]

    def _answer(self, ident: jsonrpc.RequestId | None) -> None:
        if ident is None or ident not in self.answers:
            pending = [i for i, n in self.answers.items() if n == 0]
            if ident is None and pending:  # an error with no id answers the request it refused
                self.answers[pending[0]] += 1
                return
            self._find(Violation.UNKNOWN_ID, ident)
            return
        self.answers[ident] += 1
        if self.answers[ident] == 2:
            self._find(Violation.DUPLICATE_RESPONSE, ident)

    def _event(self, event_id: str, stream: int | None) -> None:
        place = parse_event_id(event_id)
        if stream is not None and place is not None and place[0] != stream:
            self._find(Violation.FOREIGN_EVENT, event_id)  # only the broken stream is replayed
            return
        if event_id in self.seen_events:
            self._find(Violation.DUPLICATE_EVENT, event_id)
            return
        self.seen_events.add(event_id)
        if place is None:
            return
        number, seq = place
        last = self.positions.get(number)
        # a stream opens with its priming event (0), or without one (before 2025-11-25) at 1
        expected = (0, 1) if last is None else (last + 1,)
        if seq not in expected:
            self._find(Violation.GAP, event_id)
        self.positions[number] = seq if last is None else max(seq, last)

    def _find(self, violation: Violation, subject: object) -> None:
        self.findings.append(Finding(violation, str(subject)))
