"""Event assembly for the adapters whose library only splits lines (aiohttp, requests).

This is the application code those libraries leave to their users, kept to the WHATWG
event-stream rules for ``data`` and nothing else: each ``data`` field's value (one leading
space removed) is appended to the data buffer with a LF; a blank line dispatches the buffer
without its final LF, if anything was appended; comments and other fields are skipped. It adds
no check: a line the library hands over is taken as a line.
"""

from __future__ import annotations


class EventAssembler:
    def __init__(self) -> None:
        self._data: list[str] = []
        self._pending = False

    def line(self, text: str) -> str | None:
        """Feed one line (without its terminator); the event's data when it dispatches one."""
        if not text:
            if not self._pending:
                return None
            data = "\n".join(self._data)
            self._data, self._pending = [], False
            return data
        name, colon, value = text.partition(":")
        if name == "data":
            self._data.append(value[1:] if colon and value.startswith(" ") else value)
            self._pending = True
        return None
