"""The pure core of Python consumers: link info, calling, the report, the wire, selection."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import pytest

from harness.consumers.api import STREAM_PATH, LinkInfo, Message, url_for
from harness.consumers.linkinfo import link_info
from harness.consumers.outcome import CallOutcome, Ending, from_wire, to_wire
from harness.consumers.protocol import FrameError, FrameReader, encode
from harness.consumers.report import report_of
from harness.workers.calling import call
from reference_impl.framing.options import FramingOptions
from reference_impl.report import MAX_DETAIL_CHARS, Accepted
from tests.harness.conftest import one_case

LINK = LinkInfo("127.0.0.1", 9, "sse", "messages", None, "http://127.0.0.1:9/stream")


def test_the_stream_path_is_the_reference_producers() -> None:
    assert FramingOptions().path == STREAM_PATH


@pytest.mark.parametrize(
    ("framing", "url"),
    [
        ("sse", "http://127.0.0.1:5/stream"),
        ("websocket", "ws://127.0.0.1:5/stream"),
        ("grpc", "http://127.0.0.1:5/stream"),
        ("ndjson", None),
        ("length-prefixed", None),
    ],
)
def test_url_per_framing(framing: str, url: str | None) -> None:
    assert url_for(framing, "127.0.0.1", 5) == url


def test_an_ipv6_host_is_bracketed() -> None:
    assert url_for("sse", "::1", 5) == "http://[::1]:5/stream"


def test_link_info_carries_the_scenario_link_in_seconds() -> None:
    case = one_case(
        "name: t\ndescription: d\n"
        "link: {framing: sse, payload: tokens, tokens: {profile: anthropic},"
        " framing_options: {sse_body: close, max_message_bytes: 999},"
        " producer: {mode: continue},"
        " consumer: {idle_timeout_ms: 2500, incomplete_message_timeout_ms: 750,"
        " max_reconnects: 2, accept_partial_at_safe_boundary: true}}\n"
        "expect: {complete: true}\n"
    )
    info = link_info(case.scenario.link, "127.0.0.1", 4242, deadline_s=3.5)
    assert info == LinkInfo(
        host="127.0.0.1",
        port=4242,
        framing="sse",
        payload="tokens",
        profile="anthropic",
        url="http://127.0.0.1:4242/stream",
        incomplete_message_timeout_s=0.75,
        idle_timeout_s=2.5,
        deadline_s=3.5,
        max_reconnects=2,
        max_message_bytes=999,
        accept_partial_at_safe_boundary=True,
        sse_body="close",
        producer_mode="continue",
        ca_file=None,
    )
    assert LinkInfo.from_dict({**info.to_dict(), "added_later": 1}) == info


def test_profile_is_none_without_tokens() -> None:
    case = one_case(
        "name: t\ndescription: d\nlink: {framing: grpc, payload: envelope}\n"
        "expect: {complete: true}\n"
    )
    assert link_info(case.scenario.link, "h", 1).profile is None


# --- calling ------------------------------------------------------------------------------


def _list(link: LinkInfo) -> list[object]:
    return [b"a", "\u00e9", bytearray(b"c"), memoryview(b"d"), Message(b"e", 2)]


def _generator(link: LinkInfo) -> Iterator[bytes]:
    yield b"one"
    raise ConnectionResetError("reset by peer")


async def _coroutine(link: LinkInfo) -> list[str]:
    return ["x"]


async def _async_generator(link: LinkInfo) -> AsyncIterator[bytes]:
    yield b"y"
    raise TimeoutError("idle")


def _returns_async_iterable(link: LinkInfo) -> AsyncIterator[bytes]:
    return _async_generator(link)


def _digests(outcome: CallOutcome) -> list[tuple[str, int]]:
    return [(a.sha256, a.connection) for a in outcome.accepted]


def test_each_message_kind_is_hashed_in_order() -> None:
    outcome = call(_list, LINK)
    assert outcome.ending is Ending.RETURNED
    expected = [
        Accepted.of(b"a"),
        Accepted.of("\u00e9".encode()),
        Accepted.of(b"c"),
        Accepted.of(b"d"),
        Accepted.of(b"e", 2),
    ]
    assert outcome.accepted == tuple(expected)


def test_messages_before_a_raise_are_kept() -> None:
    outcome = call(_generator, LINK)
    assert (outcome.ending, outcome.error_type, outcome.text) == (
        Ending.RAISED,
        "ConnectionResetError",
        "reset by peer",
    )
    assert outcome.accepted == (Accepted.of(b"one"),)
    assert "test_core.py" in outcome.where


@pytest.mark.parametrize(
    ("function", "ending", "count"),
    [
        (_coroutine, Ending.RETURNED, 1),
        (_async_generator, Ending.RAISED, 1),
        (_returns_async_iterable, Ending.RAISED, 1),
    ],
)
def test_async_functions_run_in_their_own_loop(
    function: object, ending: Ending, count: int
) -> None:
    outcome = call(function, LINK)  # type: ignore[arg-type]
    assert (outcome.ending, len(outcome.accepted)) == (ending, count)


def test_a_lone_surrogate_is_not_the_bytes_a_producer_sent() -> None:
    outcome = call(lambda link: ["\udcff"], LINK)
    assert outcome.accepted == (Accepted.of(b"\xed\xb3\xbf"),)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (42, "returned int, not an iterable of messages"),
        (None, "returned NoneType, not an iterable of messages"),
        (b"one", "returned one bytes, not an iterable of messages"),
        ({"a": 1}, "returned a mapping (dict), not an iterable of messages"),
        ([b"ok", 3], "handed on a int as message 2, not bytes, str or Message"),
        ([Message(b"x", 0)], "handed on message 1 with connection 0 (an int >= 1)"),
    ],
)
def test_what_is_not_a_message_list_is_a_bad_return(value: object, text: str) -> None:
    outcome = call(lambda link: value, LINK)
    assert (outcome.ending, outcome.text) == (Ending.BAD_RETURN, text)


def _type_error(link: LinkInfo) -> list[bytes]:
    raise TypeError("unsupported operand")


def _exit(link: LinkInfo) -> list[bytes]:
    raise SystemExit(3)


def test_programming_errors_and_exits_are_told_apart() -> None:
    assert call(_type_error, LINK).ending is Ending.PROGRAMMING_ERROR
    assert call(_exit, LINK).ending is Ending.ESCAPED


# --- the report ---------------------------------------------------------------------------


def test_a_normal_return_is_a_complete_claim() -> None:
    accepted = (Accepted.of(b"a"), Accepted.of(b"b", 2))
    report, problem = report_of(CallOutcome(Ending.RETURNED, accepted))
    assert problem == "" and report is not None
    assert (report.verdict, report.complete, report.error_code) == ("COMPLETE", True, None)
    assert report.accepted == accepted
    assert [c.end for c in report.connections] == ["error", "stream-end"]


def test_a_raise_is_a_surfaced_failure_named_by_its_type() -> None:
    outcome = CallOutcome(
        Ending.RAISED, (Accepted.of(b"a"),), "APIConnectionError", "openai", "x" * 5000
    )
    report, _ = report_of(outcome)
    assert report is not None
    assert (report.verdict, report.complete, report.error_code) == (
        "RAISED:APIConnectionError",
        False,
        "RAISED:APIConnectionError",
    )
    assert report.detail.startswith("raised openai.APIConnectionError: xxx")
    assert len(report.detail) <= MAX_DETAIL_CHARS + 1


@pytest.mark.parametrize(
    ("outcome", "diagnosis"),
    [
        (
            CallOutcome(Ending.BAD_RETURN, text="returned int, not an iterable of messages"),
            "consumer function returned int, not an iterable of messages",
        ),
        (
            CallOutcome(
                Ending.PROGRAMMING_ERROR, (), "TypeError", "builtins", "bad", "f.py:3 in g"
            ),
            "consumer function raised TypeError: bad at f.py:3 in g: a programming error in the "
            "function or its client, not a stream failure",
        ),
        (
            CallOutcome(Ending.ESCAPED, (), "SystemExit", "builtins", "3"),
            "consumer function raised SystemExit: 3, which is no stream failure",
        ),
    ],
)
def test_no_report_has_its_own_diagnosis(outcome: CallOutcome, diagnosis: str) -> None:
    assert report_of(outcome) == (None, diagnosis)


def test_the_outcome_crosses_the_pipe_unchanged() -> None:
    outcome = CallOutcome(Ending.RAISED, (Accepted.of(b"a", 3),), "E", "m", "t", "w", 0.25)
    assert from_wire(to_wire(outcome)) == outcome


# --- the wire -----------------------------------------------------------------------------


def test_frames_survive_any_split() -> None:
    data = encode({"a": 1}) + encode({"b": [2, "\u00e9"]})
    reader = FrameReader()
    frames = [frame for byte in data for frame in reader.feed(bytes([byte]))]
    assert frames == [{"a": 1}, {"b": [2, "\u00e9"]}]
    assert reader.pending == 0


@pytest.mark.parametrize("data", [b"\x00\x00\x00\x02[]", b"\x00\x00\x00\x01{", b"\xff\xff\xff\xff"])
def test_a_broken_frame_is_refused(data: bytes) -> None:
    with pytest.raises(FrameError):
        FrameReader().feed(data)


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        LINK.port = 1  # type: ignore[misc]
