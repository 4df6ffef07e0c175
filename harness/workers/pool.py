"""Warm consumer workers: a pool per process, one worker per case in flight, reused.

Each worker is a fresh interpreter (``python -m harness.workers.worker``) that imported its
consumer function once; it runs one call at a time. A spawned interpreter, not a fork: the
runner's process runs trio (and, under ``--jobs``, is itself a forked pool worker), and client
libraries such as grpcio must not inherit a forked state. A worker that hangs is killed with
its process (``discard``); the next case gets a fresh one.

The pool belongs to the process that made it: a process forked from it (``--jobs`` workers)
starts with an empty pool and closes its copies of the parent's pipes, so every worker still
ends when the process that started it ends.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

import trio

from harness.consumers.protocol import FrameError, FrameReader, encode

#: how long a worker may take to start and import its function
STARTUP_TIMEOUT_S = 120.0
#: idle workers kept per process (all functions together); more are stopped when released
MAX_IDLE = 32
OUTPUT_TAIL = 300
READ_BYTES = 1 << 16
REAP_TIMEOUT_S = 5.0


class WorkerGoneError(Exception):
    """The worker's process ended (or broke the protocol) during a call."""


@dataclass(eq=False)
class Worker:
    """One consumer worker process and the runner's ends of its pipes."""

    ref: str
    process: subprocess.Popen[bytes]
    sock: socket.socket
    lifeline: int
    output: IO[bytes]
    reader: FrameReader = field(default_factory=FrameReader)
    calls: int = 0

    async def send(self, message: dict[str, Any]) -> None:
        view = memoryview(encode(message))
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
                continue
            except OSError as err:
                raise WorkerGoneError(f"cannot write to the worker: {err}") from None
            view = view[sent:]

    async def receive(self) -> dict[str, Any]:
        """The next frame from the worker; ``WorkerGoneError`` at EOF or a broken frame."""
        await trio.lowlevel.checkpoint()
        while True:
            try:
                chunk = self.sock.recv(READ_BYTES)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.sock)
                continue
            except OSError as err:
                raise WorkerGoneError(f"cannot read from the worker: {err}") from None
            if not chunk:
                raise WorkerGoneError("the worker closed its end")
            try:
                frames = self.reader.feed(chunk)
            except FrameError as err:
                raise WorkerGoneError(f"the worker sent a broken frame: {err}") from None
            if frames:
                if len(frames) > 1 or self.reader.pending:
                    raise WorkerGoneError("the worker sent more than one answer")
                return frames[0]

    def clear_output(self) -> None:
        with contextlib.suppress(OSError):
            self.output.truncate(0)

    def output_tail(self) -> str:
        try:
            self.output.seek(0, os.SEEK_END)
            size = self.output.tell()
            self.output.seek(max(0, size - OUTPUT_TAIL))
            return self.output.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and close the runner's ends (it is reaped by ``reap``)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.forget()

    def forget(self) -> None:
        """Close the runner's ends of the pipes without touching the process."""
        for close in (self.sock.close, lambda: os.close(self.lifeline), self.output.close):
            with contextlib.suppress(OSError):
                close()

    async def reap(self) -> int | None:
        """The exit status once the process is gone (None if it would not go)."""
        with trio.CancelScope(shield=True), trio.move_on_after(REAP_TIMEOUT_S):
            return await trio.to_thread.run_sync(self.process.wait, abandon_on_cancel=True)
        return self.process.returncode


def _output_file() -> IO[bytes]:
    """A temporary file opened for appending: the worker writes at its end whatever the runner
    truncated it to."""
    output = tempfile.TemporaryFile()  # noqa: SIM115 - the worker owns it until it is killed
    flags = fcntl.fcntl(output.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(output.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
    return output


def spawn(ref: str) -> Worker:
    """Start a worker for ``ref`` (it imports the function on its own; see ``start``)."""
    ours, theirs = socket.socketpair()
    life_read, life_write = os.pipe()
    output = _output_file()
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness.workers.worker",
                str(theirs.fileno()),
                str(life_read),
                ref,
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            pass_fds=(theirs.fileno(), life_read),
            start_new_session=True,  # Ctrl-C in the terminal is the runner's to handle
        )
    except BaseException:
        for closing in (ours.close, lambda: os.close(life_write), output.close):
            closing()
        raise
    finally:
        theirs.close()
        os.close(life_read)
    os.set_inheritable(life_write, False)
    ours.setblocking(False)
    return Worker(ref, process, ours, life_write, output)


class WorkerPool:
    """Idle workers by function, for one process."""

    def __init__(self, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.startup_timeout_s = startup_timeout_s
        self._idle: dict[str, list[Worker]] = {}
        self._busy: set[Worker] = set()
        #: functions that could not be imported: the one-line reason, given again at once
        self._unusable: dict[str, str] = {}
        self.started = 0

    async def acquire(self, ref: str) -> Worker | str:
        """An idle worker for ``ref``, or a new one once it is ready; or why there is none."""
        if ref in self._unusable:
            return self._unusable[ref]
        idle = self._idle.get(ref, [])
        while idle:
            worker = idle.pop()
            if worker.alive:
                self._busy.add(worker)
                return worker
            worker.kill()
        return await self._start(ref)

    async def _start(self, ref: str) -> Worker | str:
        try:
            worker = spawn(ref)
        except OSError as err:
            return f"cannot start a consumer worker: {err.strerror or err}"
        self.started += 1
        self._busy.add(worker)
        problem = ""
        try:
            with trio.move_on_after(self.startup_timeout_s) as scope:
                hello = await worker.receive()
            if scope.cancelled_caught:
                problem = (
                    f"consumer worker for {ref} was not ready within "
                    f"{self.startup_timeout_s:g} s (importing the function)"
                )
            elif not hello.get("ready"):
                problem = str(hello.get("problem", "the worker refused to start"))
                self._unusable[ref] = problem
        except WorkerGoneError:
            status = await worker.reap()
            problem = (
                f"consumer worker for {ref} exited ({status}) before it was ready; "
                f"output: {worker.output_tail()!r}"
            )
        except BaseException:
            await self.discard(worker)
            raise
        if problem:
            await self.discard(worker)
            return problem
        return worker

    def release(self, worker: Worker) -> None:
        """Back to the idle workers after a call that ended normally."""
        self._busy.discard(worker)
        if not worker.alive or sum(map(len, self._idle.values())) >= MAX_IDLE:
            worker.kill()
            return
        self._idle.setdefault(worker.ref, []).append(worker)

    async def discard(self, worker: Worker) -> int | None:
        """Kill the worker (a hung or broken one); its exit status."""
        self._busy.discard(worker)
        worker.kill()
        return await worker.reap()

    def idle_count(self, ref: str | None = None) -> int:
        if ref is not None:
            return len(self._idle.get(ref, []))
        return sum(map(len, self._idle.values()))

    def close(self) -> None:
        """Stop every worker of this pool (idle or busy) and wait for them, briefly."""
        workers = [w for ws in self._idle.values() for w in ws] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        for worker in workers:
            worker.kill()
        for worker in workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(REAP_TIMEOUT_S)

    def forget(self) -> None:
        """In a forked child: drop the parent's workers without stopping them."""
        for worker in [w for ws in self._idle.values() for w in ws] + list(self._busy):
            worker.forget()
        self._idle.clear()
        self._busy.clear()


_POOL: WorkerPool | None = None


def default_pool() -> WorkerPool:
    """This process's pool (made on first use)."""
    global _POOL  # noqa: PLW0603 - one pool per process, by design
    if _POOL is None:
        _POOL = WorkerPool()
    return _POOL


def close_default_pool() -> None:
    """Stop this process's workers (between runs; also at exit)."""
    global _POOL  # noqa: PLW0603
    if _POOL is not None:
        _POOL.close()
        _POOL = None


def _after_fork_in_child() -> None:
    global _POOL  # noqa: PLW0603
    if _POOL is not None:
        _POOL.forget()
        _POOL = None


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(close_default_pool)
