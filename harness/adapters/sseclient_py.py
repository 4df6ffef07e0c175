"""sseclient-py over requests: ``SSEClient(requests.get(url, stream=True))`` and
``events()``, as its README shows; each event's ``data`` is a message. The read timeout is the
link's idle timeout."""

from __future__ import annotations

from collections.abc import Iterator

import requests
import sseclient

from harness.consumers.api import LinkInfo


def consume(link: LinkInfo) -> Iterator[str]:
    assert link.url is not None, "sseclient-py speaks sse"
    headers = {"Accept": "text/event-stream"}
    with requests.get(link.url, stream=True, headers=headers, timeout=link.idle_timeout_s) as r:
        client = sseclient.SSEClient(r)  # type: ignore[arg-type]  # as its README does
        for event in client.events():
            yield event.data
