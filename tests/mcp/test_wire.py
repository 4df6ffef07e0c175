"""The exchanges' bytes: whatever the split, the same items; a cut answer is said to be cut,
and never delivers a shorter message."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.framing.http1 import Received
from reference_impl.framing.request import Refusal, Request
from reference_impl.mcp import jsonrpc
from reference_impl.mcp.errors import McpErrorCode
from reference_impl.mcp.server import Reply
from reference_impl.mcp.streams import SseEvent
from reference_impl.mcp.wire import (
    ClientExchange,
    Delivered,
    Ended,
    Failed,
    Head,
    Incoming,
    Primed,
    ServerExchange,
)
from tests.wire import bytewise, examples, split_at

RESPONSE = jsonrpc.Response(2, {"content": [{"type": "text", "text": "é done"}]})
PROGRESS = jsonrpc.Notification("notifications/progress", {"progressToken": 2, "progress": 1})
STREAM = Reply(
    200,
    (("Content-Type", "text/event-stream"),),
    events=(
        SseEvent("2-0", b"", 500),
        SseEvent("2-1", jsonrpc.encode(PROGRESS)),
        SseEvent("2-2", jsonrpc.encode(RESPONSE)),
    ),
)
JSON = Reply(200, (("Content-Type", "application/json"),), jsonrpc.encode(RESPONSE))
LOST = Reply(
    404,
    (("Content-Type", "application/json"),),
    jsonrpc.encode(jsonrpc.ErrorResponse(None, -32001, "gone")),
)
ACCEPTED = Reply(202)


def served() -> ServerExchange:
    """A server exchange that has read its request (h11 answers as the request allows)."""
    server = ServerExchange()
    request = ClientExchange().request(Request("POST", "/mcp", body=b"{}"), "POST")
    assert isinstance(server.receive_data(request), Received)
    return server


def wire(reply: Reply) -> bytes:
    return b"".join(served().pieces(reply))


def read(pieces: list[bytes], eof: bool = True, batches: bool = False) -> list[Incoming]:
    client = ClientExchange(batches)
    client.request(Request("POST", "/mcp", body=b"{}"), "POST")
    items: list[Incoming] = []
    for piece in pieces:
        items += client.receive_data(piece)
    return items + (client.receive_eof() if eof else [])


def head(reply: Reply) -> Head:
    headers = {name.lower(): value for name, value in reply.headers}
    headers["connection"] = "close"
    if reply.events is None:
        headers["content-length"] = str(len(reply.body))
    else:
        headers |= {"cache-control": "no-cache", "transfer-encoding": "chunked"}
    return Head(reply.status, headers)


WHOLE = {
    "stream": [
        head(STREAM),
        Primed("2-0", 500),
        Delivered(PROGRESS, "2-1"),
        Delivered(RESPONSE, "2-2"),
        Ended(True),
    ],
    "json": [head(JSON), Delivered(RESPONSE), Ended(True)],
    "lost": [head(LOST), Ended(True, jsonrpc.ErrorResponse(None, -32001, "gone"))],
    "accepted": [head(ACCEPTED), Ended(True)],
}
REPLIES = {"stream": STREAM, "json": JSON, "lost": LOST, "accepted": ACCEPTED}


@pytest.mark.parametrize("name", REPLIES)
def test_whole_and_bytewise(name: str) -> None:
    data = wire(REPLIES[name])
    assert read([data]) == WHOLE[name]
    assert read(bytewise(data)) == WHOLE[name]


@given(name=st.sampled_from(sorted(REPLIES)), cuts=st.lists(st.integers(0, 600), max_size=12))
@example(name="stream", cuts=[1, 2, 3])
@examples(100)
def test_any_split_gives_the_same_items(name: str, cuts: list[int]) -> None:
    data = wire(REPLIES[name])
    assert read(split_at(data, cuts)) == WHOLE[name]


@pytest.mark.parametrize("name", ["stream", "json"])
def test_a_cut_at_every_byte_is_a_cut(name: str) -> None:
    """An answer cut anywhere before its end delivers a prefix of its whole messages, then
    ``Ended(clean=False)``: never a shorter message, never a clean end."""
    data, whole = wire(REPLIES[name]), WHOLE[name]
    end = len(data) - len(b"0\r\n\r\n") if name == "stream" else len(data)
    for cut in range(end):
        items = read(bytewise(data[:cut]))
        assert items[-1] == Ended(clean=False), cut
        assert items[:-1] == whole[: len(items) - 1], cut


def test_the_server_paces_one_piece_per_event() -> None:
    pieces = served().pieces(STREAM)
    assert len(pieces) == 5
    assert pieces[1] == b"1b\r\nid: 2-0\nretry: 500\ndata: \n\n\r\n"
    assert pieces[-1] == b"0\r\n\r\n"
    cut = served().pieces(Reply(200, STREAM.headers, events=STREAM.events, complete=False))
    assert cut == pieces[:-1]


def test_bad_answers_fail_with_a_code() -> None:
    garbled = wire(Reply(200, STREAM.headers, events=(SseEvent("1-1", b"{nope"),)))
    assert [type(i) for i in read([garbled])] == [Head, Failed]
    html = wire(Reply(200, (("Content-Type", "text/html"),), b"<p>"))
    (*_, failed) = read([html])
    assert isinstance(failed, Failed) and failed.error.code is McpErrorCode.BAD_ANSWER
    (failed,) = read([b"NOT HTTP\r\n\r\n"])
    assert isinstance(failed, Failed) and failed.error.code is McpErrorCode.BAD_ANSWER
    assert read([]) == [Ended(clean=False)]


def test_the_events_before_a_bad_one_still_count() -> None:
    good = SseEvent("1-1", jsonrpc.encode(PROGRESS))
    data = wire(Reply(200, STREAM.headers, events=(good, SseEvent("1-2", b"{"))))
    items = read(bytewise(data))
    assert items[1] == Delivered(PROGRESS, "1-1")
    assert isinstance(items[2], Failed) and items[2].error.code is McpErrorCode.BAD_JSON


def test_the_server_reads_a_request_in_any_split() -> None:
    client = ClientExchange()
    data = client.request(
        Request("POST", "/mcp", (("Mcp-Session-Id", "4"),), b'{"a":1}', "h:1"), "POST"
    )
    for pieces in ([data], bytewise(data)):
        server = ServerExchange()
        got: Received | Refusal | None = None
        for piece in pieces:
            got = got or server.receive_data(piece)
        assert got == Received(
            "POST",
            "/mcp",
            {
                "host": "h:1",
                "accept": "application/json, text/event-stream",
                "mcp-session-id": "4",
                "content-length": "7",
            },
            b'{"a":1}',
        )
