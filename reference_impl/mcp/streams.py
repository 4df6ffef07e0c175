"""A session's SSE streams as the server keeps them: event ids, the log, replay.

An event id is ``<stream>-<seq>``: the stream's number in the session and the event's place in
it (0 is the priming event, 1 the first message). So ids are unique per session, a resume
names its stream, and a client can tell a gap or a repeat from the ids alone (the checker
does). Replay gives exactly the events of the named stream after the named one; the server's
misbehaving modes bend that on purpose (``server.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reference_impl.mcp.errors import McpError, McpErrorCode

_EVENT_ID = re.compile(r"^([0-9]{1,9})-([0-9]{1,9})$")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One event of an MCP stream: its id, its data (a JSON-RPC message; empty when priming),
    and ``retry`` when it tells the client how long to wait before reconnecting."""

    id: str
    data: bytes
    retry_ms: int | None = None

    @property
    def priming(self) -> bool:
        return not self.data


def event_id(stream: int, seq: int) -> str:
    return f"{stream}-{seq}"


def parse_event_id(text: str) -> tuple[int, int] | None:
    """(stream, seq) of an id of the reference server's form, else None."""
    match = _EVENT_ID.match(text)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def frame(event: SseEvent) -> bytes:
    """The event's wire form: ``id``, ``retry`` when given, one ``data`` line."""
    out = [b"id: ", event.id.encode(), b"\n"]
    if event.retry_ms is not None:
        out += [b"retry: ", str(event.retry_ms).encode(), b"\n"]
    out += [b"data: ", event.data, b"\n\n"]
    return b"".join(out)


@dataclass(slots=True)
class EventLog:
    """Every event a session's streams carried or hold for replay, by stream."""

    streams: list[list[SseEvent]] = field(default_factory=list)

    def open(self) -> int:
        """A new stream's number (1-based)."""
        self.streams.append([])
        return len(self.streams)

    def append(self, stream: int, data: bytes, retry_ms: int | None = None) -> SseEvent:
        events = self.streams[stream - 1]
        # 0 for the priming event (it opens its stream), then 1, 2, ... for the messages
        seq = 0 if not data else sum(1 for e in events if not e.priming) + 1
        event = SseEvent(event_id(stream, seq), data, retry_ms)
        events.append(event)
        return event

    def after(self, last_event_id: str) -> tuple[int, list[SseEvent]]:
        """The stream ``last_event_id`` belongs to, and its events after it.
        ``McpError(BAD_MESSAGE)`` for an id this log never gave."""
        parsed = parse_event_id(last_event_id)
        if parsed is None or not 1 <= parsed[0] <= len(self.streams):
            raise McpError(McpErrorCode.BAD_MESSAGE, f"unknown event id {last_event_id!r}")
        events = self.streams[parsed[0] - 1]
        ids = [event.id for event in events]
        if last_event_id not in ids:
            raise McpError(McpErrorCode.BAD_MESSAGE, f"unknown event id {last_event_id!r}")
        return parsed[0], events[ids.index(last_event_id) + 1 :]
