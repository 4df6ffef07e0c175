"""A consumer program with a request of its own (for the runner tests): it asks for the SSE
stream with ``Connection: close``, so h11 answers with a longer response head than the
reference consumer gets, and every frame sits later on the wire than a dry run predicts. It
decodes with the reference SSE codec and reports each event it completed, so a fault placed in
the wrong place would show in what it accepted."""

from __future__ import annotations

import hashlib
import json
import os
import socket

from reference_impl.errors import CodecError
from reference_impl.events import Message, StreamEnd
from reference_impl.framing import FramingOptions, make_client

REQUEST = (
    b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nconnection: close\r\n\r\n"
)


def main() -> None:
    address = (os.environ["TEARLINE_HOST"], int(os.environ["TEARLINE_PORT"]))
    codec = make_client("sse", FramingOptions())
    codec.initiate()  # its own request is not sent: ours is
    accepted: list[dict[str, object]] = []
    ended, error = False, ""
    with socket.create_connection(address) as sock:
        sock.sendall(REQUEST)
        try:
            while data := sock.recv(65536):
                for event in codec.receive_data(data):
                    if isinstance(event, Message):
                        digest = hashlib.sha256(event.data).hexdigest()
                        accepted.append({"sha256": digest, "size": len(event.data)})
                    ended = ended or isinstance(event, StreamEnd)
        except (ConnectionResetError, CodecError) as err:
            error = type(err).__name__
    report = {
        "verdict": "MESSAGE_COMPLETE" if ended else "STALE_PARTIAL_BUFFER",
        "complete": ended,
        "error_code": error or None,
        "accepted": accepted,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
