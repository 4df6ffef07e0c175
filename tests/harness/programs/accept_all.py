"""A broken consumer (for the runner tests): whatever it has when the stream ends, it calls a
complete, verified result. It finds the proxy through the environment (TEARLINE_HOST,
TEARLINE_PORT), as the consumer contract allows, and accepts no message by name, so only the
fail-closed invariant (I2) can catch it."""

from __future__ import annotations

import json
import os
import socket


def main() -> None:
    address = (os.environ["TEARLINE_HOST"], int(os.environ["TEARLINE_PORT"]))
    received = 0
    with socket.create_connection(address) as sock:
        try:
            while data := sock.recv(65536):
                received += len(data)
        except ConnectionResetError:
            pass  # the bug: a reset is taken for the end of the stream
    report = {"verdict": "RESULT_VERIFIED", "complete": True, "detail": f"{received} bytes"}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
