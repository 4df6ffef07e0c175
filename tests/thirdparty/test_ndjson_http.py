"""NDJSON over HTTP against a real service: an Ollama-like ``POST /api/chat`` written with
Starlette's ``StreamingResponse`` under uvicorn (h11), which streams ``application/x-ndjson``
lines (one HTTP chunk each) the way Ollama does, answers ``"stream": false`` with one
``application/json`` object as Ollama does, and refuses a GET (405) and another path (404).

``tearline consume``, ``tearline run --upstream`` (clean, and with a cut inside a line),
``tearline record`` and the replay of its recording; an answer of another content type is one
line naming it, at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.cli.main import main
from harness.record.format import read_recording
from reference_impl.framing.request import Request
from tests.thirdparty import servers
from tests.thirdparty.servers import LOOPBACK, AsyncioThread

CHAT_PATH = "/api/chat"
TOKENS = ("Hello", ",", " wörld", " 🚀", "!")
#: a line per token and the done line
LINES = len(TOKENS) + 1
BODY = '{"model": "llama3.2", "messages": [{"role": "user", "content": "hi"}]}'
ASK = ["--path", CHAT_PATH, "--json-body", BODY]
LINK = ["--framing", "ndjson-http", "--payload", "tokens", "--profile", "ollama"]


def _line(content: str, done: bool, **more: object) -> bytes:
    said = {"role": "assistant", "content": content}
    frame = {"model": "llama3.2", "created_at": "2026-12-02T00:00:00Z", "message": said}
    return json.dumps({**frame, "done": done, **more}).encode() + b"\n"


async def _lines() -> AsyncIterator[bytes]:
    for token in TOKENS:
        yield _line(token, False)
    yield _line("", True, done_reason="stop", eval_count=len(TOKENS))


async def _chat(request: HttpRequest) -> Response:
    asked = await request.json()
    if asked.get("stream", True) is False:  # Ollama's whole answer, as one JSON object
        return JSONResponse(json.loads(_line("".join(TOKENS), True, done_reason="stop")))
    return StreamingResponse(_lines(), media_type="application/x-ndjson")


def ollama_app() -> Starlette:
    return Starlette(routes=[Route(CHAT_PATH, _chat, methods=["POST"])])


@pytest.fixture(scope="module")
def ollama(asyncio_thread: AsyncioThread) -> Iterator[str]:
    """The service's ``host:port``."""
    server = servers.Uvicorn(ollama_app(), asyncio_thread, None)
    yield f"{LOOPBACK}:{server.port}"
    server.close()


def _scenario(tmp_path: Path, faults: str, expect: str) -> Path:
    path = tmp_path / "chat.yaml"
    path.write_text(
        "name: chat\n"
        "description: Ollama's streaming chat\n"
        "link: {framing: ndjson-http, payload: tokens, tokens: {profile: ollama}}\n"
        f"faults: {faults}\n"
        f"expect: {expect}\n",
        encoding="utf-8",
    )
    return path


def test_consume_posts_the_body_and_takes_every_line(
    ollama: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["consume", *LINK, "--json", "--connect", ollama, *ASK])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (status, report["verdict"], report["complete"]) == (0, "COMPLETE_EXPLICIT", True)
    assert len(report["accepted"]) == LINES
    assert report["recorded"]["stream_completion_signal_receipt"].startswith("ollama: {")


def test_consume_names_a_refusal(ollama: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["consume", *LINK, "--json", "--connect", ollama, "--path", CHAT_PATH])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (status, report["error_code"], report["detail"]) == (
        1,
        "HTTP_STATUS",
        "the service answered 405 Method Not Allowed: 'Method Not Allowed'",
    )


def test_run_upstream_clean_and_with_a_line_cut(
    ollama: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = _scenario(tmp_path, "[]", f"{{verdict: COMPLETE_EXPLICIT, accepted_messages: {LINES}}}")
    assert main(["run", str(clean), "--upstream", ollama, *ASK]) == 0, capsys.readouterr().out
    cut = _scenario(
        tmp_path,
        "[{kind: kill, how: fin, at: {frame: 3, fraction: 0.5}}]",
        "{verdict: PARTIAL_MID_TOKEN, complete: false, accepted_messages: 0}",
    )
    report = tmp_path / "report"
    args = ["run", str(cut), "--upstream", ollama, *ASK, "--report", str(report)]
    assert main(args) == 0, capsys.readouterr().out
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    assert case["outcome"] == "pass"


def test_an_answer_of_another_content_type_is_one_line_at_once(
    ollama: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``"stream": false``: Ollama answers one application/json object, not a stream."""
    path = _scenario(tmp_path, "[]", "{complete: true}")
    report = tmp_path / "report"
    whole = ["--path", CHAT_PATH, "--json-body", '{"model": "m", "stream": false}']
    args = ["run", str(path), "--upstream", ollama, *whole, "--report", str(report)]
    assert main(args) == 1
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    assert (case["outcome"], case["diagnosis"]) == (
        "error",
        "upstream does not speak ndjson-http (connection 1): PROTOCOL_ERROR: content type "
        "'application/json', not application/x-ndjson",
    )


def test_record_then_replay_needs_nothing_restated(
    ollama: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "chat.tlrec"
    status = main(["record", "--upstream", ollama, *LINK, *ASK, "-o", str(recording)])
    assert status == 0, capsys.readouterr().err
    meta = read_recording(str(recording)).meta
    assert (meta.framing, meta.request, meta.profile) == (
        "ndjson-http",
        Request("POST", CHAT_PATH, (("Content-Type", "application/json"),), BODY.encode()),
        "ollama",
    )
    scenario = tmp_path / "replay.yaml"
    scenario.write_text(
        "name: replayed\n"
        "description: the recorded chat, played back, cut inside its done line\n"
        f"link: {{framing: ndjson-http, payload: tokens, producer: {{replay: '{recording}'}}}}\n"
        "faults: [{kind: kill, how: fin, at: {match: 'done_reason'}}]\n"
        "expect: {verdict: PARTIAL_MID_TOKEN, complete: false}\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["run", str(scenario)]) == 0, capsys.readouterr().out
