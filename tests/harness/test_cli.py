"""``tearline`` as a user runs it: a separate process, its exit code, its stdout and stderr.

Exit codes: 0 all passed (or the command did its job), 1 some case did not pass, 2 bad input
(a scenario mistake, a bad path, an unusable faults file), always without a traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import trio
import yaml

from harness.faults import FAULTS
from harness.scenario import stable_seed
from tests.harness.conftest import LOOPBACK, PYTHON, read_all, sender, serve

KINDS = ", ".join(repr(kind) for kind in sorted(FAULTS))
DATA = bytes(range(100))

GOOD = """\
- name: clean
  description: A clean envelope stream verifies.
  link: {framing: sse, payload: envelope, envelope: {records: 20, chunk_records: 5}}
  expect: {verdict: RESULT_VERIFIED, complete: true}
- name: rst-inside-chunk
  description: An RST in the middle of chunk 2 fails closed.
  link: {framing: sse, payload: envelope, envelope: {records: 20, chunk_records: 5}}
  faults:
    - {kind: kill, how: rst, at: {frame: 3, fraction: 0.5}}
  expect: {verdict: ERR_ZPARQL_STREAM_TRUNCATED, complete: false}
"""

WRONG = """\
- name: clean
  description: A clean stream, with a wrong expectation.
  link: {framing: ndjson, payload: messages}
  expect: {verdict: ERR_ZPARQL_STREAM_TRUNCATED}
"""

SWEEP = """\
name: cut
description: two cuts.
link: {framing: length-prefixed, payload: messages}
faults:
  - {kind: kill, how: fin, at: {offset: 0}}
sweep:
  faults[0].at.offset: [3, 9]
expect: {complete: false}
"""

BAD = """\
- name: bad
  description: d
  link: {framing: sse, payload: envelope, envelope: {records: -1}}
  faults:
    - {kind: explode, at: {offset: 3}}
    - {kind: kill, how: sideways, at: {offset: 3}}
  expect: {verdict: NOPE}
"""


def tearline(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "harness.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_bad_input(done: subprocess.CompletedProcess[str], *lines: str) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "".join(f"{x}\n" for x in lines))


def test_validate_lists_every_mistake_as_file_line_key_message(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", BAD)
    assert_bad_input(
        tearline("validate", path),
        f"{path}:3: link.envelope.records: must be >= 0 (got -1)",
        f"{path}:5: faults[0].kind: unknown fault kind 'explode'; expected one of {KINDS}",
        f"{path}:6: faults[1].how: must be one of 'fin', 'rst', 'half' (got 'sideways')",
        f"{path}:7: expect.verdict: unknown verdict or error code 'NOPE'",
    )


def test_validate_names_an_unknown_fault_kind(tmp_path: Path) -> None:
    text = SWEEP.replace("kind: kill, how: fin,", "kind: teleport,")
    path = write(tmp_path, "kind.yaml", text)
    assert_bad_input(
        tearline("validate", path),
        f"{path}:5: faults[0].kind: unknown fault kind 'teleport'; expected one of {KINDS}",
    )


def test_validate_a_good_file(tmp_path: Path) -> None:
    done = tearline("validate", write(tmp_path, "good.yaml", GOOD))
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok: 2 cases\n", "")


def test_a_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.yaml"
    for command in ("run", "validate"):
        assert_bad_input(tearline(command, missing), f"{missing}: no such file or directory")


def test_run_exits_0_when_every_case_passes(tmp_path: Path) -> None:
    done = tearline("run", write(tmp_path, "good.yaml", GOOD))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 cases in" in done.stdout
    assert "did not pass" not in done.stdout
    assert done.stderr == ""


def test_run_exits_1_when_a_case_does_not_pass(tmp_path: Path) -> None:
    path = write(tmp_path, "wrong.yaml", WRONG)
    done = tearline("run", path)
    assert done.returncode == 1
    assert "cases that did not pass" in done.stdout
    seed = stable_seed("wrong::clean")
    assert f"replay the first: tearline run {path} -k wrong::clean --seed {seed}" in done.stdout


def test_run_k_selects_cases(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", GOOD)
    wrong = write(tmp_path, "wrong.yaml", WRONG)
    done = tearline("run", good, wrong, "-k", "good and not rst")
    assert done.returncode == 0, done.stdout
    assert "1 cases in" in done.stdout
    assert_bad_input(tearline("run", good, "-k", "nothing-matches"), "no cases selected")


def test_list_prints_case_ids_and_seeds(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", GOOD)
    sweep = write(tmp_path, "sweep.yaml", SWEEP)
    done = tearline("list", good, sweep)
    ids = ["good::clean", "good::rst-inside-chunk", "sweep::cut[offset=3]", "sweep::cut[offset=9]"]
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "".join(f"{i}  seed={stable_seed(i)}\n" for i in ids)
    selected = tearline("list", good, sweep, "-k", "offset=9 or clean")
    assert selected.stdout == "".join(f"{i}  seed={stable_seed(i)}\n" for i in (ids[0], ids[3]))
    assert_bad_input(tearline("list", good, "-k", "(clean"), "-k: cannot parse '(clean'")


def test_schema_is_json_schema_and_accepts_a_scenario_file() -> None:
    done = tearline("schema")
    assert (done.returncode, done.stderr) == (0, "")
    schema = json.loads(done.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(GOOD), schema)


def test_proxy_rejects_a_bad_faults_file_in_one_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", "faults:\n  - {kind: nope}\n")
    assert_bad_input(
        tearline("proxy", "--upstream", "127.0.0.1:1", "--faults", bad),
        f"{bad}:2: faults[0].kind: unknown fault kind 'nope'; expected one of {KINDS}",
    )
    # A position no stream of unknown framing has: frames need --framing.
    frame = write(tmp_path, "frame.yaml", "faults:\n  - {kind: kill, at: {frame: 2}}\n")
    assert_bad_input(
        tearline("proxy", "--upstream", "127.0.0.1:1", "--faults", frame),
        f"{frame}: faults[0].at.frame: frame positions need the link's framing (give --framing)",
    )
    lengths = write(tmp_path, "len.yaml", "faults:\n  - {kind: bogus_length, frame: 1, length: 1}")
    assert_bad_input(
        tearline("proxy", "--upstream", "127.0.0.1:1", "--framing", "sse", "--faults", lengths),
        f"{lengths}: faults[0].frame: framing sse has no length prefix in frame 1",
    )
    missing = tmp_path / "missing.yaml"
    assert_bad_input(
        tearline("proxy", "--upstream", "127.0.0.1:1", "--faults", missing),
        f"{missing}: no such file or directory",
    )


async def test_proxy_cannot_listen_on_a_busy_port() -> None:
    async with trio.open_nursery() as nursery:
        busy = await serve(nursery, sender(b""))
        done = await trio.run_process(
            [
                PYTHON,
                "-m",
                "harness.cli",
                "proxy",
                "--listen",
                f"{LOOPBACK}:{busy}",
                "--upstream",
                "127.0.0.1:1",
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        nursery.cancel_scope.cancel()
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        b"",
        f"tearline proxy: cannot listen on {LOOPBACK}:{busy}: Address already in use\n".encode(),
    )


async def _line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    """The next line of ``stream`` (``buffer`` keeps what came after it)."""
    while b"\n" not in buffer:
        more = await stream.receive_some()
        assert more, f"stream ended: {bytes(buffer)!r}"
        buffer += more
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


async def test_proxy_in_front_of_a_server_cuts_and_logs_the_fault(tmp_path: Path) -> None:
    faults = write(tmp_path, "cut.yaml", "faults:\n  - {kind: kill, how: rst, at: {offset: 10}}\n")
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            upstream = await serve(nursery, sender(DATA))
            argv = [
                PYTHON,
                "-m",
                "harness.cli",
                "proxy",
                "--upstream",
                f"{LOOPBACK}:{upstream}",
            ]
            argv += ["--faults", str(faults), "--max-connections", "1"]
            process = await trio.lowlevel.open_process(argv, stderr=subprocess.PIPE)
            assert process.stderr is not None
            buffer = bytearray()
            # its first line, printed once it accepts: connecting at once, with no retry, works
            listening = await _line(process.stderr, buffer)
            found = re.fullmatch(
                rf"\[tearline proxy\] listening on {LOOPBACK}:(\d+) -> {LOOPBACK}:{upstream}, "
                r"1 fault\(s\), seed 0",
                listening,
            )
            assert found, listening
            async with await trio.open_tcp_stream(LOOPBACK, int(found[1])) as consumer:
                reads = await read_all(consumer)
            assert await process.wait() == 0  # --max-connections 1: done after one
            while more := await process.stderr.receive_some():
                buffer += more
            nursery.cancel_scope.cancel()
    assert (reads.data, reads.end) == (DATA[:10], "rst")
    assert buffer.decode().splitlines() == [
        "[tearline proxy] connection 1: open",
        "[tearline proxy] connection 1 downstream: kill at byte 10: rst",
        "[tearline proxy] connection 1: closed",
    ]
