"""Request bodies read as streams: ``FirstValue`` stops where Go's decoder would, whatever the
pieces the body arrives in (whole, a byte at a time, Hypothesis-chosen splits), and refuses a
body over its bound; over HTTP, a body over the bound is a 413 the client gets to read."""

from __future__ import annotations

import http.client
import itertools
import json

import pytest
import trio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.control.bodies import FIRST_LOOK_BYTES, FirstValue
from harness.control.gojson import GoJsonError, parse
from tests.control.conftest import Api
from tests.harness.conftest import LOOPBACK


def _fed(pieces: list[bytes], limit: int = 1 << 20) -> FirstValue:
    body = FirstValue(limit)
    for piece in pieces:
        if body.feed(piece):
            break
    return body


def _outcome(body: bytes) -> object:
    try:
        return parse(body)
    except GoJsonError as err:
        return err.text


def _splits(data: bytes, cuts: list[int]) -> list[bytes]:
    marks = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(marks)]


BIG_STRING = b'{"name":"p","upstream":"u","pad":"' + "é".encode() * 70_000 + b'"}'
BODIES = [
    b'{"name":"p","upstream":"127.0.0.1:1"}',
    b'{"name":"p"',
    b"",
    b"{bad",
    BIG_STRING,
    BIG_STRING + b"trailing bytes Go never reads" * 5000,
    b"[" + b'{"name":"x","upstream":"u"},' * 4000 + b"null]",
]


@pytest.mark.parametrize("data", BODIES, ids=range(len(BODIES)))
def test_whole_and_byte_by_byte_give_what_one_parse_gives(data: bytes) -> None:
    whole = _fed([data])
    assert _outcome(whole.body) == _outcome(data)
    if len(data) < 20_000:
        bytewise = _fed([data[i : i + 1] for i in range(len(data))])
        assert _outcome(bytewise.body) == _outcome(data)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(BODIES), st.lists(st.integers(0, 1 << 24), max_size=12))
@example(BIG_STRING, [FIRST_LOOK_BYTES - 1])  # a two-byte character cut at the first look
def test_any_split_gives_what_one_parse_gives(data: bytes, cuts: list[int]) -> None:
    assert _outcome(_fed(_splits(data, cuts)).body) == _outcome(data)


def test_a_complete_value_stops_the_reading() -> None:
    data = BIG_STRING + b" " * (1 << 21)
    body = FirstValue(1 << 20)
    pieces = _splits(data, list(range(0, len(data), 4096)))
    read = next(i for i, piece in enumerate(pieces) if body.feed(piece))
    assert read < len(pieces) // 3 and not body.too_large  # the rest is never kept


def test_a_value_longer_than_the_bound_is_too_large() -> None:
    body = _fed(_splits(BIG_STRING, list(range(0, len(BIG_STRING), 1000))), limit=100_000)
    assert body.too_large and body.done and body.body == b""


async def test_over_http_a_huge_body_is_answered_413_and_the_server_goes_on(api: Api) -> None:
    huge = b'{"name":"p","upstream":"u","pad":"' + b"x" * (9 << 20) + b'"}'

    def post(body: bytes) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(LOOPBACK, api.port, timeout=30)
        connection.request("POST", "/proxies", body=body)
        answer = connection.getresponse()
        return answer.status, answer.read()

    status, body = await trio.to_thread.run_sync(post, huge)
    assert (status, json.loads(body)) == (
        413,
        {"error": "bad request body: http: request body too large", "status": 413},
    )
    small = b'{"name":"p","upstream":"127.0.0.1:1","listen":"127.0.0.1:0"}'
    assert (await trio.to_thread.run_sync(post, small))[0] == 201
