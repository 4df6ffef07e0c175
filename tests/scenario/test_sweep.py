"""Sweeps: validation of the ``sweep`` section, and expansion into cases with ids and seeds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.faults.position import Position
from harness.scenario import MAX_CASES, Scenario, ScenarioError, TokensConfig, expand, stable_seed
from tests.scenario.toys import MINIMAL, FixedShape, issues, load

CUT = """\
name: cut
description: Cut the stream somewhere.
link: {framing: sse, payload: messages}
expect: {complete: false}
faults:
  - kind: kill
    at: {offset: 0}
  - kind: latency
    delay_ms: 0
sweep:
"""  # lines 1-10; axes start at line 11


def _sweep(*axes: str) -> str:
    return CUT + "".join(f"  {axis}\n" for axis in axes)


def _lengths(table: dict[str, int], calls: list[str]) -> Callable[[Scenario], FixedShape]:
    def shape_of(scenario: Scenario) -> FixedShape:
        calls.append(scenario.link.framing)
        return FixedShape(table[scenario.link.framing])

    return shape_of


def _never(scenario: Scenario) -> FixedShape:
    raise AssertionError("the stream measured without `to: end`")


def _cases(text: str, length: int = 0) -> list[tuple[str, int]]:
    [scenario] = load(text)
    return [(case.case_id, case.seed) for case in expand(scenario, lambda _: FixedShape(length))]


# ---- validation


SWEEP_MISTAKES: dict[str, tuple[str, int, str, str]] = {
    "unknown key path": (
        _sweep("link.framin: [sse]"),
        11,
        "sweep.link.framin",
        "link has no key 'framin'; did you mean 'framing'?",
    ),
    "malformed key path": (
        _sweep("faults[x].at: [{offset: 1}]"),
        11,
        "sweep.faults[x].at",
        "not a key path",
    ),
    "index out of range": (
        _sweep("faults[2].at.offset: [1]"),
        11,
        "sweep.faults[2].at.offset",
        "faults has 2 item(s), so no [2]",
    ),
    "key into a scalar": (_sweep("seed.x: [1]"), 11, "sweep.seed.x", "seed has no keys"),
    "index into a mapping": (_sweep("link[0]: [1]"), 11, "sweep.link[0]", "link is not a list"),
    "the fault kind": (
        _sweep("faults[0].kind: [kill]"),
        11,
        "sweep.faults[0].kind",
        "has no key 'kind'",
    ),
    "the name": (_sweep("name: [a, b]"), 11, "sweep.name", "cannot be swept"),
    "a value of the wrong type": (
        _sweep("link.framing: [sse, 3]"),
        11,
        "sweep.link.framing[1]",
        "must be one of",
    ),
    "a value out of bounds": (
        _sweep("link.consumer.read_bytes:", "  - 1", "  - 0"),
        13,
        "sweep.link.consumer.read_bytes[1]",
        "must be >= 1 (got 0)",
    ),
    "a value breaking a rule in place": (
        _sweep("faults[0].at.frame: [2]"),
        11,
        "sweep.faults[0].at.frame[0]",
        "exactly one of offset, frame, utf8_char, match, request_end, after_ms",
    ),
    "a fault rule in place": (
        _sweep("faults[1].jitter_ms: [0, 9]"),
        11,
        "sweep.faults[1].jitter_ms[1]",
        "jitter may not exceed the delay",
    ),
    "a payload without its sub-config": (
        _sweep("link.payload: [envelope]").replace(
            "payload: messages}", "payload: messages, messages: {count: 1}}"
        ),
        11,
        "sweep.link.payload[0]",
        "messages: only for payload messages",
    ),
    "an empty list": (_sweep("seed: []"), 11, "sweep.seed", "an empty list makes no cases"),
    "a scalar": (
        _sweep("seed: 3"),
        11,
        "sweep.seed",
        "expected a list of values or {from, to, step}",
    ),
    "an empty range": (
        _sweep("faults[0].at.offset: {from: 5, to: 5}"),
        11,
        "sweep.faults[0].at.offset.to",
        "must be > from (5)",
    ),
    "a zero step": (
        _sweep("faults[0].at.offset: {from: 0, to: 5, step: 0}"),
        11,
        "sweep.faults[0].at.offset.step",
        "must be >= 1",
    ),
    "a misspelt end": (
        _sweep("faults[0].at.offset: {from: 0, to: ned}"),
        11,
        "sweep.faults[0].at.offset.to",
        "did you mean 'end'",
    ),
    "an unknown range key": (
        _sweep("faults[0].at.offset: {from: 0, to: 5, stepp: 1}"),
        11,
        "sweep.faults[0].at.offset.stepp",
        "did you mean 'step'",
    ),
    "a range start out of bounds": (
        _sweep("faults[0].at.offset: {from: -1, to: end}"),
        11,
        "sweep.faults[0].at.offset.from",
        "must be >= 0 (got -1)",
    ),
    "a range end out of bounds": (
        _sweep("faults[0].at.char_byte: {from: 1, to: 6}").replace("{offset: 0}", "{utf8_char: 1}"),
        11,
        "sweep.faults[0].at.char_byte.to",
        "must be <= 3 (got 5)",
    ),
    "a range over strings": (
        _sweep("link.framing: {from: 0, to: 3}"),
        11,
        "sweep.link.framing.from",
        "must be one of",
    ),
    "overlapping keys": (
        _sweep("faults[0].at: [{offset: 1}]", "faults[0].at.offset: [2]"),
        12,
        "sweep.faults[0].at.offset",
        "overlaps 'faults[0].at'",
    ),
    "too many cases": (
        _sweep("faults[0].at.offset: {from: 0, to: 1000}", "seed: {from: 0, to: 101}"),
        10,
        "sweep",
        f"makes 101000 cases; at most {MAX_CASES} are allowed",
    ),
    "not a mapping": (
        CUT.replace("sweep:\n", "sweep: [seed]\n"),
        10,
        "sweep",
        "expected a mapping",
    ),
}


@pytest.mark.parametrize(
    ("text", "line", "path", "fragment"), list(SWEEP_MISTAKES.values()), ids=list(SWEEP_MISTAKES)
)
def test_sweep_mistakes(text: str, line: int, path: str, fragment: str) -> None:
    [(got_line, got_path, message)] = issues(text)
    assert (got_line, got_path) == (line, path)
    assert fragment in message


def test_every_bad_swept_value_is_reported() -> None:
    text = _sweep("link.consumer.read_bytes: [0, 1, -1]", "link.framing: [sse, grpcc]")
    assert [(line, path) for line, path, _ in issues(text)] == [
        (11, "sweep.link.consumer.read_bytes[0]"),
        (11, "sweep.link.consumer.read_bytes[2]"),
        (12, "sweep.link.framing[1]"),
    ]


def test_sweep_shape_is_checked_even_when_the_scenario_is_invalid() -> None:
    """Key paths cannot be resolved against a broken scenario, but the shape can be checked."""
    text = _sweep("seed: []", "faults[x]: [1]").replace("framing: sse", "framing: nope")
    assert [(line, path) for line, path, _ in issues(text)] == [
        (3, "link.framing"),
        (11, "sweep.seed"),
        (12, "sweep.faults[x]"),
    ]


# ---- expansion


def test_no_sweep_makes_one_case_with_a_stable_seed() -> None:
    """Without a seed, the seed is the first 8 bytes of SHA-256 of the case id (pinned)."""
    [scenario] = load(MINIMAL)
    [case] = expand(scenario, _never)
    assert (case.case_id, case.seed, case.params) == ("x::minimal", 7870623790904346199, ())
    assert case.seed == stable_seed("x::minimal")
    assert case.scenario == scenario


def test_an_explicit_seed_wins() -> None:
    [scenario] = load(MINIMAL + "seed: 7\n")
    assert [(c.case_id, c.seed) for c in expand(scenario, _never)] == [("x::minimal", 7)]


def test_the_product_of_two_axes_in_sweep_order() -> None:
    """The first axis varies slowest; a swept seed is the case's seed."""
    text = _sweep("link.framing: [length-prefixed, sse, grpc]", "seed: [1, 2]")
    assert _cases(text) == [
        ("x::cut[framing=length-prefixed,seed=1]", 1),
        ("x::cut[framing=length-prefixed,seed=2]", 2),
        ("x::cut[framing=sse,seed=1]", 1),
        ("x::cut[framing=sse,seed=2]", 2),
        ("x::cut[framing=grpc,seed=1]", 1),
        ("x::cut[framing=grpc,seed=2]", 2),
    ]


def test_to_end_asks_the_stream_length_per_combination_of_listed_values() -> None:
    """`to: end` is exclusive like every `to`: offsets 0..length-1, the offset of each byte.
    The length may differ per framing, so it is asked with the listed values applied."""
    calls: list[str] = []
    [scenario] = load(
        _sweep("faults[0].at.offset: {from: 0, to: end}", "link.framing: [sse, ndjson]")
    )
    cases = expand(scenario, _lengths({"sse": 3, "ndjson": 2}, calls))
    assert calls == ["sse", "ndjson"]
    assert [c.case_id for c in cases] == [
        "x::cut[offset=0,framing=sse]",
        "x::cut[offset=0,framing=ndjson]",
        "x::cut[offset=1,framing=sse]",
        "x::cut[offset=1,framing=ndjson]",
        "x::cut[offset=2,framing=sse]",
    ]
    assert [c.seed for c in cases][:1] == [stable_seed("x::cut[offset=0,framing=sse]")]
    assert [c.params for c in cases][-1] == (("offset", 2), ("framing", "sse"))


def test_cases_hold_the_concrete_scenario() -> None:
    [scenario] = load(
        _sweep(
            "faults[0].at.offset: {from: 1, to: 8, step: 3}", "faults[1].delay_ms: {from: 5, to: 6}"
        )
    )
    cases = expand(scenario, _never)
    assert [c.case_id for c in cases] == [
        "x::cut[offset=1,delay_ms=5]",
        "x::cut[offset=4,delay_ms=5]",
        "x::cut[offset=7,delay_ms=5]",
    ]
    concrete = cases[1].scenario
    assert concrete.faults[0].at == Position(offset=4)  # type: ignore[attr-defined]
    assert concrete.faults[1].delay_ms == 5.0  # type: ignore[attr-defined]
    assert isinstance(concrete.faults[1].delay_ms, float)  # type: ignore[attr-defined]
    assert (concrete.sweep, concrete.seed, concrete.origin) == ((), None, scenario.origin)
    assert scenario.faults[0].at == Position(offset=0)  # type: ignore[attr-defined]


def test_whole_mappings_can_be_swept_and_show_their_given_keys() -> None:
    text = _sweep(
        "faults[0].at: [{offset: 3}, {frame: 2, fraction: 0.5}]", "link.consumer.command: [[a, b]]"
    )
    assert [case_id for case_id, _ in _cases(text)] == [
        "x::cut[at={offset:3},command=[a,b]]",
        "x::cut[at={frame:2,fraction:0.5},command=[a,b]]",
    ]


def test_an_unwritten_sub_config_is_swept_from_its_defaults() -> None:
    text = _sweep("link.tokens.count: [1, 2]").replace("payload: messages", "payload: tokens")
    [scenario] = load(text)
    assert [c.scenario.link.tokens for c in expand(scenario, _never)] == [
        TokensConfig(count=1),
        TokensConfig(count=2),
    ]


def test_axes_with_the_same_last_key_get_longer_names() -> None:
    text = CUT.replace(
        "    at: {offset: 0}", "    at: {offset: 0}\n  - {kind: kill, at: {offset: 5}}"
    )
    text += "  faults[0].at.offset: [1]\n  faults[1].at.offset: [6]\n  seed: [3]\n"
    assert _cases(text) == [("x::cut[faults[0].at.offset=1,faults[1].at.offset=6,seed=3]", 3)]


def test_a_combination_that_breaks_a_rule_fails_at_expansion() -> None:
    """Each value fits alone (checked at load); a combination may not (checked at expand)."""
    text = _sweep("link.payload: [tokens, messages]", "link.tokens.count: [1]").replace(
        "payload: messages", "payload: tokens"
    )
    [scenario] = load(text)
    with pytest.raises(ScenarioError) as caught:
        expand(scenario, _never)
    [issue] = caught.value.issues
    assert (issue.file, issue.line, issue.key_path) == ("scenarios/x.yaml", 11, "sweep")
    assert "payload=messages,count=1" in issue.message
    assert "tokens: only for payload tokens" in issue.message


def test_too_many_cases_once_the_end_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit counts the cases of every combination, with each `end` resolved (a smaller
    limit keeps this test fast; the load-time check uses the real one, above)."""
    monkeypatch.setattr("harness.scenario.cases.MAX_CASES", 10)
    [scenario] = load(_sweep("faults[0].at.offset: {from: 0, to: end}", "seed: [1, 2]"))
    assert len(expand(scenario, lambda _: FixedShape(5))) == 10
    with pytest.raises(ScenarioError) as caught:
        expand(scenario, lambda _: FixedShape(6))
    assert "makes 12 cases; at most 10 are allowed" in caught.value.issues[0].message


def test_a_range_that_ends_before_it_starts_fails_at_expansion() -> None:
    """No silent zero cases: `from: 5, to: end` on a 3-byte stream is an error."""
    [scenario] = load(
        _sweep("link.framing: [sse, grpc]", "faults[0].at.offset: {from: 5, to: end}")
    )
    with pytest.raises(ScenarioError) as caught:
        expand(scenario, _lengths({"sse": 9, "grpc": 3}, []))
    assert [issue.message for issue in caught.value.issues] == [
        "values framing=grpc: the range of faults[0].at.offset is empty (`end` is 3)"
    ]


def test_to_end_on_a_frame_offset_is_the_length_of_that_frame() -> None:
    """`faults[0].at.frame_offset: {from: 0, to: end}` visits every byte of the position's
    frame: `end` comes from the shape's `frame_length(frame)`, not from the stream's length."""
    text = CUT.replace("at: {offset: 0}", "at: {frame: 2, frame_offset: 0}")
    [scenario] = load(text + "  faults[0].at.frame_offset: {from: 0, to: end}\n")
    asked: list[int] = []
    cases = expand(scenario, lambda _: FixedShape(100, 3, asked))
    assert asked == [2]
    assert [c.case_id for c in cases] == [
        "x::cut[frame_offset=0]",
        "x::cut[frame_offset=1]",
        "x::cut[frame_offset=2]",
    ]
