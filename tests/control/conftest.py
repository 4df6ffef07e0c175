"""A tearline control API in the test's nursery (ports from the OS), an echo upstream, and the
real toxiproxy-python client pointed at it (its calls run in a thread: the client is sync)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import pytest
import trio

from harness.api_server.runtime import ProxyRuntime
from harness.api_server.server import bound_port, serve_api
from harness.control.api import ControlApi
from tests.harness.conftest import LOOPBACK, serve

T = TypeVar("T")


@dataclass
class Api:
    api: ControlApi
    runtime: ProxyRuntime
    port: int
    nursery: trio.Nursery

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A blocking client call, in a thread (the API keeps serving meanwhile)."""
        return await trio.to_thread.run_sync(partial(fn, *args, **kwargs))


async def echo(stream: trio.SocketStream) -> None:
    async with stream:
        try:
            while data := await stream.receive_some(65536):
                await stream.send_all(data)
        except trio.BrokenResourceError:
            pass


@pytest.fixture
async def api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    async with trio.open_nursery() as nursery:
        runtime = ProxyRuntime(nursery, seed=1234)
        control = ControlApi(runtime)
        stop = trio.Event()
        binds = await nursery.start(serve_api, control, LOOPBACK, 0, stop.wait)
        port = bound_port(binds)
        from toxiproxy.api import APIConsumer  # noqa: PLC0415 - the test dependency

        monkeypatch.setattr(APIConsumer, "host", LOOPBACK)
        monkeypatch.setattr(APIConsumer, "port", port)
        yield Api(control, runtime, port, nursery)
        stop.set()
        await runtime.stop_all()
        nursery.cancel_scope.cancel()


@pytest.fixture
async def echo_port(api: Api) -> int:
    return await serve(api.nursery, echo)
