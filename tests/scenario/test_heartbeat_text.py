"""Deprecation ``heartbeat-text-alone``: a stall's ``heartbeat_text`` without ``heartbeat`` is
read as the bytes it always wrote: the framing's own kind only where the text is exactly that
heartbeat on a link that is known and fixed, ``raw`` everywhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults.heartbeat import http2_ping, sse_comment
from harness.scenario import ScenarioFormatWarning, read_text
from harness.scenario.heartbeat_text import native_heartbeat
from harness.scenario.loader import load_faults_file


@pytest.mark.parametrize(
    ("framing", "chunked", "raw", "found"),
    [
        ("sse", True, sse_comment("ping", True), ("sse-comment", None)),
        ("sse", False, b": ping\n", ("sse-comment", None)),
        ("sse", False, b": keep-alive\n", ("sse-comment", "keep-alive")),
        ("sse", True, b"d\r\n: keep-alive\n\r\n", ("sse-comment", "keep-alive")),
        ("sse", True, b"D\r\n: keep-alive\n\r\n", None),  # sse-comment writes lower-case hex
        ("sse", True, b"8\r\n: ping\n\n\r\n", None),  # a blank line too: it ends an event
        ("sse", True, b"9\r\n: ping\n\r\n", None),  # a wrong chunk size
        ("sse", True, b": ping\n", None),  # not a chunk of a chunked body
        ("sse", False, b": ping\n\n", None),
        ("sse", False, b":ping\n", None),  # sse-comment writes a space after the colon
        ("sse", False, b": \n", None),
        ("grpc", False, http2_ping(), ("grpc-ping", None)),
        ("grpc", False, b": ping\n", None),
        ("websocket", False, b"\x89\x00", None),  # no text encodes to it, and none is asked
        ("ndjson", False, b": ping\n", None),
        (None, False, b": ping\n", None),
    ],
)
def test_the_framings_own_kind_only_for_its_exact_bytes(
    framing: str | None, chunked: bool, raw: bytes, found: tuple[str, str | None] | None
) -> None:
    assert native_heartbeat(framing, chunked, raw) == found


HEAD = """\
name: s
description: d
link: {framing: sse, payload: tokens, framing_options: {sse_body: close}}
expect: {complete: true}
"""


def _stall(extra: str, sweep: str = "") -> tuple[object, list[str]]:
    text = HEAD + "faults:\n  - {kind: stall, at: {frame: 2}, duration_ms: 10" + extra + "}\n"
    load = read_text(text + sweep, "x.yaml")
    assert load.issues == (), load.issues
    (scenario,) = load.scenarios
    fault = scenario.faults[0]
    heartbeat = (fault.heartbeat, fault.heartbeat_text)  # type: ignore[attr-defined]
    return heartbeat, [w.message.split("; write ")[1] for w in load.warnings]


def test_a_comment_line_is_read_as_sse_comment_and_other_bytes_as_raw() -> None:
    rewrites = " (`tearline upgrade` rewrites the file)"
    assert _stall(', heartbeat_text: ": ping\\n"') == (
        ("sse-comment", None),
        ["`heartbeat: sse-comment` instead (the heartbeat this text is)" + rewrites],
    )
    assert _stall(', heartbeat_text: ": ping\\n\\n"') == (
        ("raw", ": ping\n\n"),
        ["`heartbeat: raw` before it" + rewrites],
    )


def test_a_swept_link_or_text_keeps_the_bytes_raw() -> None:
    text = ', heartbeat_text: ": ping\\n"'
    framing = "sweep:\n  link.framing_options.sse_body: [close, chunked]\n"
    assert _stall(text, framing)[0] == ("raw", ": ping\n")
    swept = 'sweep:\n  faults[0].heartbeat_text: [": ping\\n", ": pong\\n"]\n'
    assert _stall(text, swept)[0] == ("raw", ": ping\n")


def test_a_sweep_of_the_text_of_a_stall_without_one_makes_each_case_raw() -> None:
    swept = 'sweep:\n  faults[0].heartbeat_text: [": ping\\n", ": pong\\n"]\n'
    heartbeat, advice = _stall(", heartbeat_interval_ms: 5", swept)
    assert heartbeat == ("raw", ": ping\n")
    assert advice == [
        '`heartbeat: raw` and `heartbeat_text: ": ping\\n"` in faults[0] (each case still takes '
        "its own text) (`tearline upgrade` rewrites the file)"
    ]


def test_what_is_not_the_old_form_is_left_to_the_validator() -> None:
    """A swept heartbeat, an empty text, a text that is no text, another fault: no warning,
    and the validator says what is wrong."""
    for extra in (
        ', heartbeat_text: ""',
        ", heartbeat_text: 5",
    ):
        text = HEAD + "faults:\n  - {kind: stall, at: {frame: 2}, duration_ms: 10" + extra + "}\n"
        load = read_text(text, "x.yaml")
        assert (load.warnings, len(load.issues)) == ((), 1)
    other = HEAD + 'faults:\n  - {kind: split, at: {frame: 2}, heartbeat_text: ": p\\n"}\n'
    load = read_text(other, "x.yaml")
    assert load.warnings == ()
    assert [i.message.split(";")[0] for i in load.issues] == ["unknown key"]
    swept = (
        HEAD
        + 'faults:\n  - {kind: stall, at: {frame: 2}, duration_ms: 10, heartbeat_text: ": p\\n"}\n'
        + "sweep:\n  faults[0].heartbeat: [raw, sse-comment]\n"
    )
    assert read_text(swept, "x.yaml").warnings == ()


def test_a_faults_file_reads_the_old_form_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    stall = "{kind: stall, at: {offset: 0}, duration_ms: 1, heartbeat_text: hb}"
    path.write_text(f"format: 1\nfaults:\n  - {stall}\n")
    with pytest.warns(ScenarioFormatWarning) as caught:
        (fault,) = load_faults_file(path)
    assert (fault.heartbeat, fault.heartbeat_text, fault.connection) == ("raw", "hb", 0)  # type: ignore[attr-defined]
    assert [str(w.message).split(": deprecated")[0] for w in caught] == [
        f"{path}:3: warning: faults[0].heartbeat_text"
    ]
