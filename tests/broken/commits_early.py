"""Broken consumer: commits a message before its expected size has arrived.

The bug: the 4-byte length prefix is read exactly, but the body is read with one
``recv(size)``, and whatever that returns is the message. ``recv`` returns what is there, not
what was asked for, so a body that arrives in two reads is committed short, and the rest of it
is then read as the next length prefix (seed 000 ``expected_message_size``: "preventing
premature commit"; catalogue case 57, Shopify/dalli's short read used as the value).

Speaks: length-prefixed; every payload.
"""

from __future__ import annotations

import socket
import struct

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.framing.options import DEFAULT_MAX_MESSAGE_BYTES
from reference_impl.report import ConsumerReport
from tests.broken.contract import (
    ALL_PAYLOADS,
    Tally,
    Target,
    connect,
    emit,
    read_some,
    transport_error,
)
from tests.broken.payload import PayloadLayer

FRAMINGS = ("length-prefixed",)
PAYLOADS = ALL_PAYLOADS
#: keeps one ``recv`` from allocating a huge buffer; not part of the bug
RECV_CAP = 1 << 20


def recv_exactly(
    sock: socket.socket, target: Target, tally: Tally, count: int
) -> tuple[bytes, str]:
    """``(count bytes, "")``, or what arrived and how the connection ended first."""
    data = b""
    while len(data) < count:
        more, end = read_some(sock, target, bool(data), count - len(data))
        if end:
            return data, end
        tally.received(more)
        data += more
    return data, ""


def consume(target: Target) -> ConsumerReport:
    tally, payload = Tally(), PayloadLayer(target)
    with connect(target) as sock:
        while True:
            header, end = recv_exactly(sock, target, tally, 4)
            if end:
                return payload.conclude(tally, end, transport_error(end, bool(header)), header)
            (size,) = struct.unpack(">I", header)
            if size > DEFAULT_MAX_MESSAGE_BYTES:
                error = CodecError(ErrorCode.FRAME_TOO_LARGE, f"declared {size} bytes")
                return payload.conclude(tally, "error", error, header)
            body, end = b"", ""
            if size:
                body, end = read_some(sock, target, True, min(size, RECV_CAP))  # BUG: one read
                if end:
                    return payload.conclude(tally, end, transport_error(end, True), header)
                tally.received(body)
            # BUG: ``body`` may be shorter than ``size``; it is committed all the same.
            if not payload.feed(body):
                return payload.conclude(tally, "error", None)
            tally.accept(body)


if __name__ == "__main__":
    emit(consume(Target.from_env()))
