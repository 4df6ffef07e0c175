"""Recordings for the record/replay tests, built by hand (no I/O)."""

from __future__ import annotations

from pathlib import Path

from harness.record.format import End, Event, Meta, Read, Recording, dumps

META = Meta(
    framing="sse",
    payload="tokens",
    tearline="0.1.0",
    created="2026-05-09T07:35:25.120Z",
    upstream="127.0.0.1:18080",
)


def sample(events: tuple[Event, ...] | None = None, meta: Meta = META) -> Recording:
    """A request, three producer reads with pauses, FIN from the producer, then the consumer."""
    return Recording(
        meta,
        events
        if events is not None
        else (
            Read(0.5, "consumer", b"GET /stream HTTP/1.1\r\n"),
            Read(0.75, "consumer", b"host: x\r\n\r\n"),
            Read(2.0, "producer", b"HTTP/1.1 200 OK\r\n\r\n"),
            Read(12.0, "producer", b"data: a\n\n"),
            Read(42.0, "producer", b"data: b\n\n"),
            End(50.0, "producer", "eof"),
            End(51.0, "consumer", "eof"),
        ),
    )


def write(tmp_path: Path, recording: Recording | None = None, name: str = "r.tlrec") -> Path:
    path = tmp_path / name
    path.write_bytes(dumps(recording or sample()))
    return path
