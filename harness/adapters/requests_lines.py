"""requests' ``iter_lines()`` on a streamed response (``requests.get(url, stream=True)``), the
way applications read an SSE stream with requests alone: each line goes to the usual event
assembly (``_sse.EventAssembler``), each dispatched event's data is a message. The read
timeout is the link's idle timeout."""

from __future__ import annotations

from collections.abc import Iterator

import requests

from harness.adapters._sse import EventAssembler
from harness.consumers.api import LinkInfo


def consume(link: LinkInfo) -> Iterator[str]:
    assert link.url is not None, "requests' iter_lines is run over sse"
    headers = {"Accept": "text/event-stream"}
    events = EventAssembler()
    with requests.get(link.url, stream=True, headers=headers, timeout=link.idle_timeout_s) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            data = events.line(line.decode("utf-8"))
            if data is not None:
                yield data
