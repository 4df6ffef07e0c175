"""A consumer worker: one process that imports a consumer function once and calls it for one
case at a time (``python -m harness.workers.worker CONTROL_FD LIFELINE_FD MODULE:FUNCTION``).

The runner starts it (``harness.workers.pool``) with one end of a socket pair as
``CONTROL_FD`` and the read end of a pipe as ``LIFELINE_FD``. The runner holds the pipe's only
write end, so when the runner's process ends, however it ends, the pipe reports EOF and the
worker exits, even in the middle of a call that hangs. Standard output and error go to a file
the runner reads when a call has no report.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

from harness.consumers.api import LinkInfo
from harness.consumers.outcome import to_wire
from harness.consumers.protocol import FrameReader, encode
from harness.workers.calling import call

READ_BYTES = 1 << 16


class ResolveError(Exception):
    """The ``MODULE:FUNCTION`` reference names nothing callable."""


def locate(ref: str) -> str:
    """Why ``package.module:function`` names no module that exists, or ''; without importing
    the module itself (the command line checks this before it forks its jobs)."""
    module_name, _, name = ref.partition(":")
    if not module_name or not name:
        return f"{ref!r} is not MODULE:FUNCTION"
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as err:  # a parent package that fails to import
        return f"cannot import {module_name!r}: {type(err).__name__}: {err}"
    return "" if found is not None else f"no module named {module_name!r}"


def resolve(ref: str) -> Callable[[LinkInfo], Any]:
    """Import ``package.module:function``; ``ResolveError`` says what is wrong in one line."""
    module_name, _, name = ref.partition(":")
    if not module_name or not name:
        raise ResolveError(f"{ref!r} is not MODULE:FUNCTION")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # whatever the module raises at import
        raise ResolveError(f"cannot import {module_name!r}: {type(err).__name__}: {err}") from None
    function = getattr(module, name, None)
    if function is None:
        raise ResolveError(f"module {module_name!r} has no attribute {name!r}")
    if not callable(function):
        raise ResolveError(f"{ref} is not callable (it is {type(function).__name__})")
    result: Callable[[LinkInfo], Any] = function
    return result


def _watch_lifeline(fd: int) -> None:
    """Exit the moment the runner's process is gone (EOF on the lifeline)."""
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    os._exit(0)


def _frames(sock: socket.socket) -> Any:
    reader = FrameReader()
    while chunk := sock.recv(READ_BYTES):
        yield from reader.feed(chunk)


def serve(sock: socket.socket, ref: str) -> None:
    try:
        function = resolve(ref)
    except ResolveError as err:
        sock.sendall(encode({"ready": False, "problem": str(err)}))
        return
    sock.sendall(encode({"ready": True, "pid": os.getpid()}))
    for request in _frames(sock):
        outcome = call(function, LinkInfo.from_dict(request["link"]))
        sock.sendall(encode(to_wire(outcome)))


def main(argv: list[str]) -> int:
    control, lifeline, ref = int(argv[1]), int(argv[2]), argv[3]
    threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()
    with socket.socket(fileno=control) as sock:
        serve(sock, ref)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # threads the function left running must not keep the worker alive
