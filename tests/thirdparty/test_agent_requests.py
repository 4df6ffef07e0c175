"""Requests as agents make them, against a real service: the chat-completions endpoint of
docs/examples/sse_service.py (Starlette and sse-starlette under uvicorn), which answers only
``POST /v1/chat/completions`` with a JSON body asking for a stream, as OpenAI's does (405 for
a GET, 404 for another path, 415 without the JSON content type, 400 for a body that is no
streaming call).

``tearline consume``, ``tearline run --upstream`` and ``tearline record`` take the request
curl's way; what the service refuses is said in one line with its status and the start of its
body; a recording keeps the request, so its replay needs nothing restated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.record.format import read_recording
from harness.scenario import load_file
from reference_impl.framing.request import Request
from tests.thirdparty import servers
from tests.thirdparty.servers import LOOPBACK, AsyncioThread
from tests.thirdparty.test_chaos_testing_doc import TOKEN_MS, _service_module

CHAT_PATH = "/v1/chat/completions"
#: what the doc's service streams: the role, 21 tokens, the finish, [DONE]
EVENTS = 24

BODY = '{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
ASK = ["--path", CHAT_PATH, "--json-body", BODY]
LINK = ["--framing", "sse", "--payload", "tokens", "--profile", "openai"]


@pytest.fixture(scope="module")
def chat(asyncio_thread: AsyncioThread) -> Iterator[str]:
    """The service's ``host:port``."""
    server = servers.Uvicorn(_service_module().app(TOKEN_MS), asyncio_thread, None)
    yield f"{LOOPBACK}:{server.port}"
    server.close()


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    status = main(["consume", *LINK, "--json", *args])
    report: dict[str, object] = json.loads(capsys.readouterr().out.splitlines()[-1])
    return status, report


def test_consume_posts_the_body_and_takes_the_whole_stream(
    chat: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report = _report(capsys, "--connect", chat, *ASK)
    assert (status, report["verdict"], report["complete"]) == (0, "COMPLETE_EXPLICIT", True)
    assert len(report["accepted"]) == EVENTS  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        (["--path", "/v1/nowhere"], "the service answered 404 Not Found: 'Not Found'"),
        (
            ["--path", CHAT_PATH],
            "the service answered 405 Method Not Allowed: 'Method Not Allowed'",
        ),
        (
            ["--path", "/v1/completions", "--json-body", BODY],
            "the service answered 404 Not Found: 'Not Found'",
        ),
        (
            ["--path", CHAT_PATH, "--data", BODY],
            "the service answered 415 Unsupported Media Type: "
            '\'{"error":{"type":"invalid_request_error","message":"send Content-Type: '
            "application/json\"}}'",
        ),
        (
            ["--path", CHAT_PATH, "--json-body", '{"stream": false}'],
            "the service answered 400 Bad Request: "
            '\'{"error":{"type":"invalid_request_error","message":"a streaming call needs '
            "messages and stream: true\"}}'",
        ),
    ],
)
def test_what_the_service_refuses_is_an_http_status_error_quoting_it(
    chat: str, capsys: pytest.CaptureFixture[str], asked: list[str], said: str
) -> None:
    status, report = _report(capsys, "--connect", chat, *asked)
    assert (status, report["complete"], report["error_code"]) == (1, False, "HTTP_STATUS")
    assert report["detail"] == said


SCENARIO = """\
name: chat
description: a streaming chat completion, whole
link: {framing: sse, payload: tokens, tokens: {profile: openai}}
expect: {verdict: COMPLETE_EXPLICIT, complete: true}
"""


def test_run_upstream_takes_the_request_and_names_a_refusal(
    chat: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    assert main(["run", str(path), "--upstream", chat, *ASK]) == 0, capsys.readouterr().out
    capsys.readouterr()
    report = tmp_path / "report"
    asked = ["--path", CHAT_PATH]  # a GET: the service serves POST only
    assert main(["run", str(path), "--upstream", chat, *asked, "--report", str(report)]) == 1
    (case,) = json.loads((report / "results.json").read_text())["cases"]
    assert (case["outcome"], case["diagnosis"]) == (
        "error",
        "upstream refused the request (connection 1): the service answered 405 Method Not "
        "Allowed: 'Method Not Allowed'",
    )


def test_record_keeps_the_request_and_its_replay_needs_nothing_restated(
    chat: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "chat.tlrec"
    status = main(["record", "--upstream", chat, *LINK, *ASK, "-o", str(recording)])
    assert status == 0, capsys.readouterr().err
    meta = read_recording(str(recording)).meta
    assert (meta.request, meta.profile) == (
        Request("POST", CHAT_PATH, (("Content-Type", "application/json"),), BODY.encode()),
        "openai",
    )
    scenario = tmp_path / "replay.yaml"
    scenario.write_text(
        "name: replayed\n"
        "description: the recorded completion, played back\n"
        f"link: {{framing: sse, payload: tokens, producer: {{replay: '{recording}'}}}}\n"
        "expect: {verdict: COMPLETE_EXPLICIT, complete: true}\n",
        encoding="utf-8",
    )
    (loaded,) = load_file(scenario)
    assert (loaded.link.request.method, loaded.link.request.path) == ("POST", CHAT_PATH)
    assert loaded.link.request.body == BODY and loaded.link.tokens is not None
    capsys.readouterr()
    assert main(["run", str(scenario)]) == 0, capsys.readouterr().out


def test_record_refuses_what_the_service_refused(
    chat: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "refused.tlrec"
    asked = ["--path", CHAT_PATH]  # a GET: the service serves POST only
    assert main(["record", "--upstream", chat, *LINK, *asked, "-o", str(out)]) == 1
    assert capsys.readouterr().err == (
        "tearline record: the service answered 405 Method Not Allowed: 'Method Not Allowed'; "
        "nothing written (--allow-status keeps it)\n"
    )
    assert not out.exists()
    kept = ["-o", str(out), "--allow-status"]
    assert main(["record", "--upstream", chat, *LINK, *asked, *kept]) == 0
    assert read_recording(str(out)).sent("producer").startswith(b"HTTP/1.1 405 ")


def _doc_scenarios() -> str:
    """docs/chaos-testing.md's ``agent-api.yaml`` block."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "chaos-testing.md").read_text()
    blocks = re.findall(r"^```yaml\n(.*?)^```", doc, re.DOTALL | re.MULTILINE)
    (text,) = [str(b) for b in blocks if b.startswith("# agent-api.yaml")]
    return text


def test_the_docs_agent_api_scenarios_pass_against_the_docs_service(
    chat: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent-api.yaml"
    path.write_text(_doc_scenarios(), encoding="utf-8")
    assert main(["run", str(path), "--upstream", chat]) == 0, capsys.readouterr().out
    capsys.readouterr()
    report = tmp_path / "refused"
    asked = ["--path", CHAT_PATH, "-X", "GET", "--report", str(report)]
    assert main(["run", str(path), "--upstream", chat, *asked]) == 1
    cases = json.loads((report / "results.json").read_text())["cases"]
    assert {case["diagnosis"] for case in cases} == {
        "upstream refused the request (connection 1): the service answered 405 Method Not "
        "Allowed: 'Method Not Allowed'"
    }
