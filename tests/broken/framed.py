"""One connection read through a reference framing codec, with the contract's timeouts.

For broken consumers whose bug is above the framing (in the envelope or token logic, or in how
long they wait): they get whole messages from here, exactly as the reference consumer does, and
the way the connection ended (``end``: ``"stream-end"``, ``"eof"``, ``"rst"``, ``"timeout"`` or
``"error"``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message, StreamEnd
from reference_impl.framing import FramingOptions, make_client
from tests.broken.contract import (
    READ_BYTES,
    Tally,
    Target,
    send,
    transport_error,
)

#: framing and transport errors that mean "the rest never came" (as in the reference consumer);
#: any other framing error is a frame that does not parse: a content error
CUT_SHORT = frozenset(
    {
        ErrorCode.FRAME_TRUNCATED,
        ErrorCode.STREAM_END_MISSING,
        ErrorCode.CONNECTION_RESET,
        ErrorCode.IDLE_TIMEOUT,
        ErrorCode.REMOTE_ERROR,
    }
)


def broken_frame(error: CodecError | None) -> bool:
    """The framing refused a frame (as opposed to: the stream stopped)."""
    return error is not None and error.code not in CUT_SHORT


class FramedReader:
    """Iterate ``messages()``; afterwards ``end``, ``error`` and ``stream_end`` say how the
    connection ended and ``partial`` holds the bytes of a message cut short."""

    def __init__(
        self, sock: socket.socket, target: Target, tally: Tally, resume_id: str = ""
    ) -> None:
        self.sock, self.target, self.tally = sock, target, tally
        options = FramingOptions(
            resume_id=resume_id, sse_body=target.sse_body, request=target.request
        )
        self.codec = make_client(target.framing, options)
        self.end = ""
        self.error: CodecError | None = None
        self.stream_end: StreamEnd | None = None

    @property
    def partial(self) -> bytes:
        return self.codec.partial()

    @property
    def in_message(self) -> bool:
        """A message is in flight: bytes of it arrived, or its announced size did."""
        return bool(self.codec.partial()) or self.codec.expected_size() is not None

    def timeout_s(self) -> float | None:
        """How long to wait for the next byte (None: for ever)."""
        if self.in_message:
            return self.target.incomplete_message_timeout_s
        return self.target.idle_timeout_s

    def messages(self) -> Iterator[Message]:
        send(self.sock, self.codec.initiate())
        while not self.end:
            data = self._read()
            if data is None:
                return
            try:
                events = self.codec.receive_data(data) if data else self.codec.receive_eof()
            except CodecError as err:
                self.end, self.error = ("error" if data else "eof"), err
                return
            for event in events:
                if isinstance(event, StreamEnd):
                    self.end, self.stream_end = "stream-end", event
                    break
                yield event
            send(self.sock, self.codec.data_to_send())
            if not data:
                self.end = self.end or "eof"

    def _read(self) -> bytes | None:
        """The next read (``b""`` at EOF), or None when the connection broke or went quiet."""
        self.sock.settimeout(self.timeout_s())
        try:
            data = self.sock.recv(READ_BYTES)
        except (TimeoutError, ConnectionResetError) as err:
            self.end = "timeout" if isinstance(err, TimeoutError) else "rst"
            self.error = transport_error(self.end, self.in_message)
            return None
        if data:
            self.tally.received(data)
        return data
