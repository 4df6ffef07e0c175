"""The loader accepts valid files into exact dataclasses, and finds files on disk."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.faults import Kill
from harness.faults.position import Position
from harness.scenario import (
    ConsumerConfig,
    CountRange,
    EnvelopeConfig,
    Expect,
    FramingConfig,
    Link,
    MessagesConfig,
    Origin,
    ProducerConfig,
    Scenario,
    ScenarioError,
    Span,
    SweepAxis,
    TokensConfig,
    load_file,
    load_paths,
    load_text,
)
from reference_impl.framing import FramingName
from reference_impl.payload import PayloadName
from tests.scenario.toys import MINIMAL, REGISTRY, ToyCorrupt, ToyKill, ToyLatency, load

FULL = """\
name: envelope-rst-inside-chunk-7     # a comment
description: What this proves, one sentence.
source: "seed 001 §4.2; catalogue case 18"
link:
  framing: sse
  payload: envelope
  envelope: {records: 1000, chunk_records: 50}
  framing_options: {max_message_bytes: 1024, sse_body: close, ws_text: false,
                    ws_fragment_bytes: 16}
  producer:
    mode: restart
    channel_capacity_chunks: 3
    upstream: "localhost:9000"
  consumer:
    incomplete_message_timeout_ms: 250
    idle_timeout_ms: 2000
    accept_partial_at_safe_boundary: true
    max_reconnects: 2
    read_bytes: 1
    pause_at_message: 3
    pause_ms: 1500
    command: [python, my_consumer.py]
faults:
  - kind: kill
    how: fin
    at: {frame: 7, fraction: 0.5}
  - kind: latency
    direction: upstream
    delay_ms: 20
  - kind: corrupt
    at: {utf8_char: 2, char_byte: 2}
    value: 255
    frames: [1, 2]
    notes: [a, b]
    flip: true
    label: x
expect:
  verdict: ERR_ZPARQL_STREAM_TRUNCATED
  complete: false
  accepted_messages: {min: 0, max: 7}
sweep:
  link.framing: [length-prefixed, sse]
  faults[1].delay_ms: {from: 0, to: end, step: 2}
seed: 7
deadline_ms: 5000
"""


def test_full_example_loads_into_exact_dataclasses() -> None:
    """Every key of the format, given, lands in its field."""
    [scenario] = load(FULL)
    assert scenario == Scenario(
        name="envelope-rst-inside-chunk-7",
        description="What this proves, one sentence.",
        source="seed 001 §4.2; catalogue case 18",
        link=Link(
            framing=FramingName.SSE,
            payload=PayloadName.ENVELOPE,
            envelope=EnvelopeConfig(records=1000, chunk_records=50),
            framing_options=FramingConfig(
                max_message_bytes=1024, sse_body="close", ws_text=False, ws_fragment_bytes=16
            ),
            producer=ProducerConfig(
                mode="restart", channel_capacity_chunks=3, upstream="localhost:9000"
            ),
            consumer=ConsumerConfig(
                incomplete_message_timeout_ms=250.0,
                idle_timeout_ms=2000.0,
                accept_partial_at_safe_boundary=True,
                max_reconnects=2,
                read_bytes=1,
                pause_at_message=3,
                pause_ms=1500.0,
                command=("python", "my_consumer.py"),
            ),
        ),
        faults=(
            ToyKill(how="fin", at=Position(frame=7, fraction=0.5)),
            ToyLatency(direction="upstream", delay_ms=20.0),
            ToyCorrupt(
                at=Position(utf8_char=2, char_byte=2),
                value=255,
                frames=(1, 2),
                notes=("a", "b"),
                flip=True,
                label="x",
            ),
        ),
        expect=Expect(
            verdict="ERR_ZPARQL_STREAM_TRUNCATED",
            complete=False,
            accepted_messages=CountRange(min=0, max=7),
        ),
        sweep=(
            SweepAxis("link.framing", ("link", "framing"), ("length-prefixed", "sse"), 42),
            SweepAxis("faults[1].delay_ms", ("faults", 1, "delay_ms"), Span(0, "end", 2), 43),
        ),
        seed=7,
        deadline_ms=5000.0,
        origin=Origin("scenarios/x.yaml", 1),
    )


def test_minimal_example_gets_every_default() -> None:
    """Only the required keys: every other field has its documented default."""
    [scenario] = load(MINIMAL)
    assert scenario == Scenario(
        name="minimal",
        description="The smallest valid scenario.",
        link=Link(framing=FramingName.NDJSON, payload=PayloadName.MESSAGES),
        expect=Expect(verdict="MESSAGE_COMPLETE"),
        origin=Origin("scenarios/x.yaml", 1),
    )
    link = scenario.link
    assert (link.framing_options, link.producer, link.consumer) == (
        FramingConfig(16 * 1024 * 1024, "chunked", True, 0),
        ProducerConfig("restart", 2, None),
        ConsumerConfig(1000.0, 5000.0, False, 0, 65536, None, 0.0, False, None),
    )
    assert (scenario.source, scenario.faults, scenario.sweep, scenario.seed) == (None, (), (), None)
    assert scenario.deadline_ms == 10000.0


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("messages", MessagesConfig()),
        ("envelope", EnvelopeConfig(200, 50)),
        ("tokens", TokensConfig("openai", 30, False, True)),
    ],
)
def test_payload_config_defaults(payload: str, expected: object) -> None:
    """A link without its payload's sub-config reads the defaults."""
    [scenario] = load(MINIMAL.replace("payload: messages", f"payload: {payload}"))
    assert scenario.link.payload_config == expected


def test_messages_count_size_and_texts() -> None:
    """count/size_bytes default to 5 x 64 bytes; texts gives the exact messages instead."""
    generated = MessagesConfig(count=3)
    given = MessagesConfig(texts=("a", "bé"))
    assert (generated.message_count, generated.message_bytes) == (3, 64)
    assert (MessagesConfig().message_count, MessagesConfig().message_bytes) == (5, 64)
    assert given.message_count == 2
    [scenario] = load(
        MINIMAL.replace("payload: messages", "payload: messages, messages: {texts: [a, bé]}")
    )
    assert scenario.link.messages == given


def test_list_file_holds_several_scenarios_sharing_a_link_by_alias() -> None:
    """A file may be a list; YAML anchors and merge keys share settings between items."""
    text = """\
    - name: first
      description: d
      link: &link {framing: grpc, payload: tokens, tokens: {profile: anthropic}}
      expect: &expect {any_of: [COMPLETE_EXPLICIT, COMPLETE_BY_LENGTH]}
    - name: second
      description: d
      link: {<<: *link, framing: websocket}
      expect: *expect
    """
    first, second = load(text)
    tokens = TokensConfig(profile="anthropic")
    assert first.link == Link(framing=FramingName.GRPC, payload=PayloadName.TOKENS, tokens=tokens)
    assert second.link == Link(
        framing=FramingName.WEBSOCKET, payload=PayloadName.TOKENS, tokens=tokens
    )
    assert (
        first.expect == second.expect == Expect(any_of=("COMPLETE_EXPLICIT", "COMPLETE_BY_LENGTH"))
    )
    assert (first.origin, second.origin) == (
        Origin("scenarios/x.yaml", 1),
        Origin("scenarios/x.yaml", 5),
    )


def test_ints_are_accepted_for_floats_and_exact_count_for_accepted_messages() -> None:
    text = MINIMAL.replace("expect: {verdict: MESSAGE_COMPLETE}", "expect: {accepted_messages: 6}")
    [scenario] = load(text + "deadline_ms: 1\n")
    assert scenario.deadline_ms == 1.0
    assert isinstance(scenario.deadline_ms, float)
    assert scenario.expect == Expect(accepted_messages=6)


def test_a_date_is_a_string_where_a_string_is_expected() -> None:
    [scenario] = load(MINIMAL + "source: 2024-05-01\n")
    assert scenario.source == "2024-05-01"


def test_load_file_reads_utf8_with_or_without_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    [scenario] = load_file(path, faults=REGISTRY)
    assert scenario.origin == Origin(str(path), 1)


def test_load_paths_walks_directories_sorted_and_only_yaml(tmp_path: Path) -> None:
    """Directories are searched recursively for .yaml/.yml, in sorted order; files given by
    name are read whatever their suffix; a file named twice is read once."""
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.yml").write_text(MINIMAL.replace("minimal", "z"))
    (tmp_path / "a.yaml").write_text(MINIMAL.replace("minimal", "a"))
    (tmp_path / "README.md").write_text("not a scenario")
    (tmp_path / "notes.txt").write_text(MINIMAL.replace("minimal", "txt"))
    found = load_paths([tmp_path, tmp_path / "a.yaml", tmp_path / "notes.txt"], faults=REGISTRY)
    assert [s.name for s in found] == ["a", "z", "txt"]
    assert [s.name for s in load_paths(str(tmp_path), faults=REGISTRY)] == ["a", "z"]


def test_load_paths_collects_issues_across_files(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(MINIMAL.replace("ndjson", "nd"))
    (tmp_path / "two.yaml").write_text("name: [\n")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScenarioError) as caught:
        load_paths(
            [
                tmp_path / "one.yaml",
                tmp_path / "two.yaml",
                tmp_path / "nope.yaml",
                tmp_path / "empty",
            ],
            faults=REGISTRY,
        )
    assert [(i.file, i.line, i.key_path) for i in caught.value.issues] == [
        (str(tmp_path / "nope.yaml"), 0, ""),
        (str(tmp_path / "empty"), 0, ""),
        (str(tmp_path / "one.yaml"), 3, "link.framing"),
        (str(tmp_path / "two.yaml"), 2, ""),
    ]
    assert str(caught.value.issues[0]) == f"{tmp_path / 'nope.yaml'}: no such file or directory"


def test_load_paths_rejects_colliding_case_ids(tmp_path: Path) -> None:
    """Case ids are <file stem>::<name>: the same stem and name in two folders would clash."""
    for folder in ("sse", "ws"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "cuts.yaml").write_text(MINIMAL)
    with pytest.raises(ScenarioError) as caught:
        load_paths([tmp_path], faults=REGISTRY)
    [issue] = caught.value.issues
    assert (issue.file, issue.line, issue.key_path) == (
        str(tmp_path / "ws" / "cuts.yaml"),
        1,
        "name",
    )
    assert str(tmp_path / "sse" / "cuts.yaml") in issue.message


def test_load_file_reports_bad_encoding_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(MINIMAL.encode() + b"source: caf\xe9\n")
    with pytest.raises(ScenarioError) as caught:
        load_file(path, faults=REGISTRY)
    [issue] = caught.value.issues
    assert (issue.line, issue.key_path) == (5, "")
    assert "UTF-8" in issue.message


def test_the_real_fault_registry_is_the_default() -> None:
    """Without ``faults=``, kinds come from harness.faults.FAULTS."""
    text = MINIMAL + "faults: [{kind: kill, how: half, at: {offset: 10}}]\n"
    [scenario] = load_text(text)
    assert scenario.faults == (Kill(how="half", at=Position(offset=10)),)


def test_scenarios_are_frozen() -> None:
    [scenario] = load(MINIMAL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.name = "other"  # type: ignore[misc]
