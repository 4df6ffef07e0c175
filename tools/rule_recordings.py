"""Write the recordings the rule scenarios replay: streams no reference producer writes.

``python -m tools.rule_recordings`` writes ``scenarios/recordings/*.tlrec`` (checked in; run it
again after changing a stream below). Each is one exchange in the recording format
(``docs/recording-format.md``): the request a client makes, the producer's response in one read,
then its FIN.
"""

from __future__ import annotations

from pathlib import Path

from harness.record.format import End, Meta, Read, Recording, dumps

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "scenarios" / "recordings"
REQUEST = b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse_bom_and_named_events() -> bytes:
    """A byte order mark before the first field, events without ids, a named event, a retry."""
    events = [
        "\ufeffdata: first\n\n".encode(),
        b"data: second\n: a comment\n\n",
        b"event: update\ndata: third\n\n",
        b"data: fourth\nretry: 10\n\n",
    ]
    return SSE_HEAD + b"".join(chunk(e) for e in events) + b"0\r\n\r\n"


RECORDINGS = {"sse-bom-and-named-events.tlrec": ("sse", sse_bom_and_named_events)}


def recording(framing: str, body: bytes) -> Recording:
    meta = Meta(framing, "messages", "hand-made", "2026-12-02T00:00:00.000Z", "none")
    events = (
        Read(0.0, "consumer", REQUEST),
        Read(1.0, "producer", body),
        End(2.0, "producer", "eof"),
        End(2.0, "consumer", "eof"),
    )
    return Recording(meta, events)


def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, (framing, make) in RECORDINGS.items():
        (FOLDER / name).write_bytes(dumps(recording(framing, make())))
        print(FOLDER / name)


if __name__ == "__main__":
    main()
