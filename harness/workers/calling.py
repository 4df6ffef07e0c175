"""Call one consumer function and record how it ended (runs inside the consumer worker).

The function may be a plain function returning an iterable of messages, a generator, a
coroutine function returning an iterable, or an async generator; async ones run in a fresh
asyncio event loop per call. Messages are hashed as they are handed on, so a generator that
raises after three messages has handed on exactly those three.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import traceback
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from typing import Any

from harness.consumers.api import LinkInfo, Message
from harness.consumers.outcome import CallOutcome, Ending, bounded_text
from reference_impl.report import Accepted, AcceptedLog

#: exceptions that are a bug in the function (or in the client it calls), not a failure of
#: the stream the client surfaced
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    TypeError,
    AttributeError,
    NameError,
    AssertionError,
    ImportError,
    NotImplementedError,
    SyntaxError,
)
_SINGLE = (bytes, bytearray, memoryview, str, Message)


class BadMessageError(Exception):
    """The function handed on something that is not a message."""


class _Collector:
    def __init__(self) -> None:
        self.accepted = AcceptedLog()  # each connection's first messages, the rest tallied
        self.count = 0

    def take(self, item: object) -> None:
        self.count += 1
        data, connection = (item.data, item.connection) if isinstance(item, Message) else (item, 1)
        if isinstance(data, str):
            # a lone surrogate (a client that decoded with surrogateescape) stays visible:
            # its bytes are never the UTF-8 a producer sent
            data = data.encode("utf-8", "surrogatepass")
        if not isinstance(data, bytes | bytearray | memoryview):
            raise BadMessageError(
                f"handed on a {type(data).__name__} as message {self.count}, not bytes, str "
                "or Message"
            )
        if type(connection) is not int or connection < 1:
            raise BadMessageError(
                f"handed on message {self.count} with connection {connection!r} (an int >= 1)"
            )
        self.accepted.add(Accepted.of(bytes(data), connection))


def _shape_problem(result: object) -> str:
    """'' if ``result`` can be iterated for messages, else what it is instead."""
    if isinstance(result, _SINGLE):
        return f"returned one {type(result).__name__}, not an iterable of messages"
    if isinstance(result, Mapping):
        return f"returned a mapping ({type(result).__name__}), not an iterable of messages"
    if not isinstance(result, Iterable | AsyncIterable):
        return f"returned {type(result).__name__}, not an iterable of messages"
    return ""


async def _drain_async(result: AsyncIterable[object], collector: _Collector) -> None:
    async for item in result:
        collector.take(item)


def _drain(result: object, collector: _Collector) -> None:
    if isinstance(result, Awaitable) and not isinstance(result, Iterable | AsyncIterable):
        result = asyncio.run(_awaited(result))
    if problem := _shape_problem(result):
        raise BadMessageError(problem)
    if isinstance(result, AsyncIterable):
        asyncio.run(_drain_async(result, collector))
        return
    assert isinstance(result, Iterable)
    for item in result:
        collector.take(item)


async def _awaited(awaitable: Awaitable[object]) -> object:
    return await awaitable


def _where(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def _ending(err: BaseException) -> Ending:
    if isinstance(err, BadMessageError):
        return Ending.BAD_RETURN
    if not isinstance(err, Exception):
        return Ending.ESCAPED
    if isinstance(err, PROGRAMMING_ERRORS):
        return Ending.PROGRAMMING_ERROR
    return Ending.RAISED


def call(function: Callable[[LinkInfo], Any], link: LinkInfo) -> CallOutcome:
    """Call ``function`` once and say how it ended; never raises (but for MemoryError)."""
    collector = _Collector()
    started = time.monotonic()
    try:
        if inspect.iscoroutinefunction(function):
            _drain(asyncio.run(function(link)), collector)
        else:
            _drain(function(link), collector)
    except BaseException as err:  # the function's end, whatever it is, is the outcome
        ending = _ending(err)
        own = ending is Ending.BAD_RETURN
        return CallOutcome(
            ending=ending,
            accepted=tuple(collector.accepted.listed),
            accepted_past=collector.accepted.past,
            error_type="" if own else type(err).__name__,
            error_module="" if own else type(err).__module__,
            text=bounded_text(str(err)),
            where="" if own else _where(err),
            duration_s=time.monotonic() - started,
        )
    return CallOutcome(
        Ending.RETURNED,
        tuple(collector.accepted.listed),
        accepted_past=collector.accepted.past,
        duration_s=time.monotonic() - started,
    )
