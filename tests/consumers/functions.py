"""Consumer functions for the tests: one correct one on the reference codecs, and one per way
a function can go wrong (raise, hang, return a non-list, exit, die)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator

from harness.consumers.api import LinkInfo, Message
from reference_impl.errors import CodecError
from reference_impl.events import Message as WireMessage
from reference_impl.events import StreamEnd
from reference_impl.framing import FramingOptions, make_client


class StreamCutError(Exception):
    """The stream ended without its explicit end."""


def codec_consumer(link: LinkInfo) -> Iterator[bytes]:
    """A correct client on the reference codecs: yields each message, raises on a cut."""
    options = FramingOptions(max_message_bytes=link.max_message_bytes, sse_body=link.sse_body)
    codec = make_client(link.framing, options)
    with socket.create_connection((link.host, link.port), timeout=link.idle_timeout_s) as sock:
        sock.sendall(codec.initiate())
        while True:
            data = sock.recv(65536)
            try:
                events = codec.receive_data(data) if data else codec.receive_eof()
            except CodecError as err:
                yield from (e.data for e in err.events if isinstance(e, WireMessage))
                raise
            for event in events:
                if isinstance(event, WireMessage):
                    yield event.data
                elif isinstance(event, StreamEnd):
                    if not event.ok:
                        raise StreamCutError(event.detail)
                    return
            if out := codec.data_to_send():
                sock.sendall(out)
            if not data:
                if link.framing in ("length-prefixed", "ndjson"):
                    return  # no end marker: EOF at a boundary is the end
                raise StreamCutError("EOF before the explicit end")


def list_consumer(link: LinkInfo) -> list[bytes]:
    """The same, returning a list (a failure loses the messages before it)."""
    return list(codec_consumer(link))


async def async_consumer(link: LinkInfo) -> list[str]:
    """A coroutine function returning str messages (after one loop turn)."""
    await asyncio.sleep(0)
    return [m.decode() for m in codec_consumer(link)]


async def async_generator_consumer(link: LinkInfo) -> AsyncIterator[Message]:
    for data in codec_consumer(link):
        await asyncio.sleep(0)
        yield Message(data, connection=1)


def two_then_raise(link: LinkInfo) -> Iterator[bytes]:
    yield b"one"
    yield b"two"
    raise ConnectionResetError("peer reset")


def returns_int(link: LinkInfo) -> int:
    return 42


def returns_bytes(link: LinkInfo) -> bytes:
    return b"one message"


def yields_dict(link: LinkInfo) -> Iterator[object]:
    yield b"fine"
    yield {"not": "a message"}


def bad_connection(link: LinkInfo) -> list[Message]:
    return [Message(b"x", connection=0)]


def type_error(link: LinkInfo) -> list[bytes]:
    return [b"x" + "y"]  # type: ignore[operator]


def exits(link: LinkInfo) -> list[bytes]:
    sys.exit(3)


def dies(link: LinkInfo) -> list[bytes]:
    print("about to die", flush=True)
    os._exit(7)


def hangs(link: LinkInfo) -> list[bytes]:
    print("hanging now", flush=True)
    while True:
        time.sleep(3600)


def echo_link(link: LinkInfo) -> list[str]:
    """Hands on the link it was given, one field per message (for the LinkInfo test)."""
    return [f"{key}={value}" for key, value in sorted(link.to_dict().items())]


def pid(link: LinkInfo) -> list[str]:
    return [str(os.getpid())]


NOT_CALLABLE = 3


def tail_at_eof(link: LinkInfo) -> Iterator[bytes]:
    """Broken on purpose (NDJSON): hands on an unterminated last line at EOF as a message,
    so a stream cut inside a message yields a truncated one."""
    with socket.create_connection((link.host, link.port), timeout=link.idle_timeout_s) as sock:
        buffered = b""
        while data := sock.recv(65536):
            buffered += data
            *lines, buffered = buffered.split(b"\n")
            yield from (line for line in lines if line)
        if buffered:
            yield buffered  # BUG: a line the stream never finished
