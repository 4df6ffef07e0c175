"""The recording file format: round trip, and every refusal by its code, line and key."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.record.format import (
    ENDINGS,
    SIDES,
    VERSION,
    End,
    Meta,
    Problem,
    Read,
    Recording,
    RecordingError,
    Side,
    dumps,
    parse,
    read_recording,
)
from reference_impl.framing.request import Request
from tests.record.samples import META, sample, write
from tests.wire import examples


def _lines(recording: Recording) -> list[dict[str, object]]:
    return [json.loads(line) for line in dumps(recording).splitlines()]


def _joined(lines: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _refusal(data: bytes) -> RecordingError:
    with pytest.raises(RecordingError) as caught:
        parse(data, "r.tlrec")
    return caught.value


def test_a_recording_survives_the_round_trip() -> None:
    recording = sample()
    assert parse(dumps(recording)) == recording


def test_any_bytes_and_a_consumer_command_survive_the_round_trip() -> None:
    meta = Meta("grpc", "messages", consumer=("my-client", "{host}", "{port}"))
    recording = Recording(
        meta, (Read(0.0, "producer", bytes(range(256))), End(1.0, "producer", "rst"))
    )
    assert parse(dumps(recording)) == recording


def test_the_header_comes_first_with_format_and_version() -> None:
    first = _lines(sample())[0]
    assert list(first)[:2] == ["format", "version"]
    assert first["version"] == VERSION


def test_the_recording_knows_what_each_side_sent_and_how_it_ended() -> None:
    recording = sample()
    assert recording.sent("consumer") == b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n"
    assert recording.sent("producer") == b"HTTP/1.1 200 OK\r\n\r\ndata: a\n\ndata: b\n\n"
    assert recording.end_of("producer") == End(50.0, "producer", "eof")
    assert Recording(META, ()).end_of("producer") is None


@pytest.mark.parametrize("cut", range(1, 9))
def test_a_file_cut_at_a_line_end_is_truncated(cut: int) -> None:
    lines = dumps(sample()).splitlines(keepends=True)  # 9 lines: header, 7 records, trailer
    err = _refusal(b"".join(lines[:cut]))
    assert (err.problem, err.line, err.file) == (Problem.TRUNCATED, cut, "r.tlrec")


def test_a_file_cut_inside_a_line_is_truncated_at_that_line() -> None:
    data = dumps(sample())
    for cut in range(1, len(data)):
        err = _refusal(data[:cut])
        assert err.problem is Problem.TRUNCATED
        assert err.line == data[:cut].count(b"\n") + (0 if data[cut - 1] == ord("\n") else 1)


def test_an_empty_file_is_truncated() -> None:
    assert _refusal(b"").problem is Problem.TRUNCATED


def test_another_version_is_refused_at_its_version_key() -> None:
    lines = _lines(sample())
    lines[0]["version"] = VERSION + 1
    lines[1] = {"a record": "of a format this tearline does not know"}
    err = _refusal(_joined(lines))
    assert (err.problem, err.line, err.path) == (Problem.VERSION, 1, ("version",))


def test_a_file_of_something_else_is_not_a_recording() -> None:
    assert _refusal(b'{"name": "x"}\n').problem is Problem.NOT_A_RECORDING
    assert _refusal(b"name: x\n").problem is Problem.MALFORMED  # not even JSON


@pytest.mark.parametrize(
    ("line", "change", "key"),
    [
        (2, {"data": "not base64!"}, ("data",)),
        (2, {"data": ""}, ("data",)),
        (2, {"from": "proxy"}, ("from",)),
        (3, {"t_ms": 0.1}, ("t_ms",)),  # earlier than the line before
        (3, {"t_ms": float("nan")}, ()),  # NaN is not JSON
        (3, {"t_ms": True}, ("t_ms",)),
        (7, {"how": "fin"}, ("how",)),
        (2, {"extra": 1}, ()),
    ],
)
def test_a_malformed_record_is_refused_at_its_line_and_key(
    line: int, change: dict[str, object], key: tuple[str, ...]
) -> None:
    lines = _lines(sample())
    lines[line - 1] = {**lines[line - 1], **change}
    err = _refusal(_joined(lines))
    assert (err.problem, err.line, err.path) == (Problem.MALFORMED, line, key)


def test_bytes_after_their_side_ended_are_refused() -> None:
    events = (End(1.0, "producer", "eof"), Read(2.0, "producer", b"late"))
    err = _refusal(dumps(Recording(META, events)))
    assert (err.problem, err.line) == (Problem.MALFORMED, 3)


def test_a_trailer_that_does_not_count_the_records_is_refused() -> None:
    lines = _lines(sample())
    del lines[3]
    err = _refusal(_joined(lines))
    assert (err.problem, err.line, err.path) == (Problem.MALFORMED, 8, ("trailer",))


def test_records_after_the_trailer_are_refused() -> None:
    data = dumps(sample())
    extra = {"t_ms": 60.0, "from": "producer", "data": base64.b64encode(b"x").decode()}
    err = _refusal(data + json.dumps(extra).encode() + b"\n")
    assert (err.problem, err.line) == (Problem.MALFORMED, 10)


def test_the_error_is_one_line_naming_file_line_and_key() -> None:
    lines = _lines(sample())
    lines[0]["version"] = 7
    err = _refusal(_joined(lines))
    assert "\n" not in err.text
    assert err.text.startswith("r.tlrec:1: version: ")


def test_read_recording_refuses_a_missing_file_and_a_directory(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.tlrec", tmp_path):
        with pytest.raises(RecordingError) as caught:
            read_recording(str(path))
        assert (caught.value.problem, caught.value.file) == (Problem.UNREADABLE, str(path))


def test_read_recording_sees_a_file_change(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert read_recording(str(path)) == sample()
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    os.utime(path, ns=(1, 1))  # a new version, even within the clock's resolution
    with pytest.raises(RecordingError) as caught:
        read_recording(str(path))
    assert caught.value.problem is Problem.TRUNCATED


@st.composite
def _recordings(draw: st.DrawFn) -> Recording:
    """Any valid recording: time-ordered reads of either side, each side ending at most once."""
    events: list[Read | End] = []
    t, ended = 0.0, set[Side]()
    for _ in range(draw(st.integers(0, 12))):
        t += draw(st.floats(0, 1000, allow_nan=False).map(lambda x: round(x, 3)))
        side = draw(st.sampled_from([s for s in SIDES if s not in ended]))
        if draw(st.booleans()) or len(ended) == 1:
            events.append(Read(round(t, 3), side, draw(st.binary(min_size=1, max_size=64))))
        else:
            ended.add(side)
            events.append(End(round(t, 3), side, draw(st.sampled_from(ENDINGS))))
        if len(ended) == 2:
            break
    return Recording(META, tuple(events))


@examples(200)
@given(_recordings())
def test_any_recording_survives_the_round_trip(recording: Recording) -> None:
    assert parse(dumps(recording)) == recording


@examples(200)
@given(_recordings(), st.data())
def test_any_cut_of_any_recording_is_refused_as_truncated(
    recording: Recording, data: st.DataObject
) -> None:
    whole = dumps(recording)
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(RecordingError) as caught:
        parse(whole[:cut])
    assert caught.value.problem is Problem.TRUNCATED


def test_a_version_1_recording_still_reads_with_no_request() -> None:
    """The files of the first version (no request, no payload settings) are read as they are:
    the documentation's own sample is one."""
    recording = read_recording(str(Path(__file__).parents[2] / "docs/recordings/sse-tokens.tlrec"))
    meta = recording.meta
    assert (meta.framing, meta.payload, meta.consumer) == ("sse", "tokens", None)
    assert (meta.request, meta.profile, meta.consumer_function) == (None, None, None)


def test_the_request_and_the_payload_settings_round_trip() -> None:
    request = Request(
        "POST", "/v1/chat/completions", (("Content-Type", "application/json"),), b'{"a":1}'
    )
    meta = dataclasses.replace(META, request=request, profile="openai", consumer_function="m:f")
    assert parse(dumps(sample(meta=meta)), "r.tlrec").meta == meta
    assert _lines(sample(meta=meta))[0]["request"] == {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [["Content-Type", "application/json"]],
        "body": base64.b64encode(b'{"a":1}').decode(),
    }


@pytest.mark.parametrize(
    ("request_obj", "key"),
    [
        ("GET", ("request",)),
        ({"method": "GET", "path": "/", "headers": [["a"]], "body": ""}, ("request",)),
        ({"method": "GET", "path": "/", "headers": [], "body": "%%%"}, ("request", "body")),
        ({"method": "GET", "path": "/", "headers": []}, ()),
    ],
)
def test_a_malformed_request_is_refused_at_its_key(
    request_obj: object, key: tuple[str, ...]
) -> None:
    lines = _lines(sample())
    lines[0]["request"] = request_obj
    with pytest.raises(RecordingError) as caught:
        parse(_joined(lines), "r.tlrec")
    assert (caught.value.problem, caught.value.line, caught.value.path) == (
        Problem.MALFORMED,
        1,
        key,
    )
