"""``link.producer.replay`` and ``speed`` in scenario files: every mistake refused at load, at
its key and line (the recording itself is read then, so a broken one never reaches a run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.record.format import dumps
from harness.scenario import ScenarioError, load_text
from harness.scenario.model import ProducerConfig
from tests.record.samples import META, sample, write


def _issues(producer: str, framing: str = "sse") -> list[tuple[int, str]]:
    text = (
        "name: t\n"
        "description: d\n"
        "link:\n"
        f"  framing: {framing}\n"
        "  payload: tokens\n"
        f"  producer: {producer}\n"
        "expect: {verdict: COMPLETE_EXPLICIT}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_text(text, "s.yaml")
    return [(issue.line, issue.key_path) for issue in caught.value.issues]


def test_a_valid_replay_loads(tmp_path: Path) -> None:
    path = write(tmp_path)
    text = (
        "name: t\ndescription: d\n"
        f"link: {{framing: sse, payload: tokens, producer: {{replay: '{path}', speed: 2}}}}\n"
        "expect: {verdict: COMPLETE_EXPLICIT}\n"
    )
    (scenario,) = load_text(text)
    assert (scenario.link.producer.replay, scenario.link.producer.speed) == (str(path), 2.0)
    assert scenario.link.producer.external


def test_replay_and_upstream_together_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path)
    issues = _issues(f"{{replay: '{path}', upstream: '127.0.0.1:9'}}")
    assert issues == [(6, "link.producer.replay")]


@pytest.mark.parametrize(
    "data",
    [
        b"",  # empty
        dumps(sample())[:-20],  # cut short
        dumps(sample()).replace(b'"version": 2', b'"version": 3', 1),  # another version
        b"not a recording\n",
    ],
)
def test_a_recording_that_cannot_be_used_is_refused_at_its_key(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.tlrec"
    path.write_bytes(data)
    assert _issues(f"{{replay: '{path}'}}") == [(6, "link.producer.replay")]


def test_a_missing_recording_is_refused_at_its_key(tmp_path: Path) -> None:
    assert _issues(f"{{replay: '{tmp_path / 'missing.tlrec'}'}}") == [(6, "link.producer.replay")]


def test_a_recording_of_another_framing_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path)  # recorded over sse
    assert META.framing == "sse"
    assert _issues(f"{{replay: '{path}'}}", framing="ndjson") == [(6, "link.producer.replay")]


@pytest.mark.parametrize(
    ("extra", "key"),
    [("speed: -1", "speed"), ("speed: 1001", "speed"), ("mode: continue", "mode")],
)
def test_speed_bounds_and_mode_continue_are_refused(tmp_path: Path, extra: str, key: str) -> None:
    path = write(tmp_path)
    assert _issues(f"{{replay: '{path}', {extra}}}") == [(6, f"link.producer.{key}")]


def test_a_speed_without_a_replay_is_refused() -> None:
    assert _issues("{speed: 2}") == [(6, "link.producer.speed")]


def test_the_default_producer_is_the_reference_one() -> None:
    assert not ProducerConfig().external
    assert ProducerConfig().speed == 1.0
