"""A session between the reference client's and server's cores, in memory (pure).

What the trio shells do over sockets, done over byte strings: every exchange's request goes
to a fresh ``ServerExchange``, its reply to the client's, each cut into pieces by ``split`` (so
a test can feed any split, one byte at a time, or a reply cut short with ``cut``). The tests
drive the cores through it, and so can anything that needs a session's wire without a socket.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reference_impl.framing.http1 import Received
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.client import Call, ClientCore, Done, Resume, SessionLost, Step
from reference_impl.mcp.server import McpServer
from reference_impl.mcp.wire import ClientExchange, Incoming, ServerExchange

Split = Callable[[bytes], list[bytes]]


def whole(data: bytes) -> list[bytes]:
    return [data]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


@dataclass(slots=True)
class Loopback:
    server: McpServer
    core: ClientCore
    split: Split = whole
    #: exchange number (1-based, in order) -> bytes of its reply that get through
    cut: dict[int, int] = field(default_factory=dict)
    #: every exchange: the request's bytes and the reply's
    wire: list[tuple[bytes, bytes]] = field(default_factory=list)

    def exchange(self, client: ClientExchange, request: bytes) -> list[Incoming]:
        server = ServerExchange()
        received = None
        for piece in self.split(request):
            received = received or server.receive_data(piece)
        if not isinstance(received, Received):
            raise AssertionError(f"the request did not arrive whole: {received!r}")
        reply = b"".join(server.pieces(self.server.handle(received)))
        self.wire.append((request, reply))
        reply = reply[: self.cut.get(len(self.wire), len(reply))]
        items: list[Incoming] = []
        for piece in self.split(reply):
            items += client.receive_data(piece)
        return items + client.receive_eof()

    def call(self, request: jsonrpc.Request) -> tuple[Call, Step]:
        """One request to its end: resumed as the client's core says, never waited for."""
        call = Call(self.core, request)
        client, data = self.core.post(request)
        while True:
            call.take(self.exchange(client, data))
            step = call.next_step()
            if not isinstance(step, Resume):
                return call, step
            client, data = self.core.resume(step.last_event_id)

    def notify(self, message: jsonrpc.Notification) -> list[Incoming]:
        client, data = self.core.post(message)
        return self.exchange(client, data)

    def open(self) -> Step:
        """initialize, then the initialized notification."""
        _, step = self.call(self.core.initialize())
        if isinstance(step, Done):
            self.notify(self.core.initialized())
        return step

    def session(self, steps: int) -> list[Step]:
        """A whole session: open it, list the tools, call ``work``; a lost session is
        replaced once, and the request sent once more."""
        out = [self.open()]
        requests: list[Callable[[], jsonrpc.Request]] = [
            lambda: self.core.request("tools/list"),
            lambda: self.core.call_tool("work", {"steps": steps}),
        ]
        for make in requests:
            if not isinstance(out[-1], Done):
                break
            _, step = self.call(make())
            if isinstance(step, SessionLost) and self.core.sessions == 1:
                out += [step, self.open()]
                if not isinstance(out[-1], Done):
                    break
                _, step = self.call(make())
            out.append(step)
        return out
