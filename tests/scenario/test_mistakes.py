"""Every kind of mistake is reported at its exact line and key path, with the key facts.

Each case is a file with one mistake; ``MINIMAL`` is lines 1-4 (name, description, link,
expect), so most cases replace or append a line. Messages are checked loosely (a fragment),
lines and key paths exactly.
"""

from __future__ import annotations

import pytest

from harness.scenario import ScenarioError, SchemaIssue
from tests.scenario.toys import MINIMAL, issues, load, where

LINK = "link: {framing: ndjson, payload: messages}"
EXPECT = "expect: {verdict: MESSAGE_COMPLETE}"


def _link(text: str) -> str:
    return MINIMAL.replace(LINK, text)


def _expect(text: str) -> str:
    return MINIMAL.replace(EXPECT, text)


def _faults(text: str) -> str:
    return MINIMAL + "faults:\n" + text


def _item(text: str) -> str:
    """``text`` as an item of a YAML list."""
    return "- " + text.rstrip("\n").replace("\n", "\n  ") + "\n"


CASES: dict[str, tuple[str, int, str, str]] = {
    # unknown and missing keys
    "unknown top-level key": (
        MINIMAL + "descripton: x\n",
        5,
        "descripton",
        "did you mean 'description'",
    ),
    "unknown nested key": (
        _link("link: {framing: sse, payload: messages, framng_options: {}}"),
        3,
        "link.framng_options",
        "did you mean 'framing_options'",
    ),
    "unknown key, no close match": (
        _expect("expect: {verdict: MESSAGE_COMPLETE, zzz: 1}"),
        4,
        "expect.zzz",
        "'accepted_messages'",
    ),
    "unknown fault key": (
        _faults("  - {kind: kill, hwo: rst, at: {offset: 1}}\n"),
        6,
        "faults[0].hwo",
        "did you mean 'how'",
    ),
    "missing top-level key": (
        MINIMAL.replace("description: The smallest valid scenario.\n", ""),
        1,
        "description",
        "required key missing",
    ),
    "missing nested key": (
        _link("link:\n  framing: sse"),
        3,
        "link.payload",
        "required key missing",
    ),
    "missing fault key": (
        _faults("  - kind: kill\n    how: fin\n"),
        6,
        "faults[0].at",
        "required key missing",
    ),
    # wrong types
    "bool for int": (
        _link("link: {framing: sse, payload: messages, consumer: {max_reconnects: true}}"),
        3,
        "link.consumer.max_reconnects",
        "expected an integer (got boolean true)",
    ),
    "string for int": (MINIMAL + "seed: '3'\n", 5, "seed", "expected an integer (got string '3')"),
    "float for int": (MINIMAL + "seed: 1.5\n", 5, "seed", "expected an integer (got number 1.5)"),
    "int for bool": (
        _link("link: {framing: sse, payload: messages, framing_options: {ws_text: 1}}"),
        3,
        "link.framing_options.ws_text",
        "expected true or false (got integer 1)",
    ),
    "int for string": (
        MINIMAL.replace("The smallest valid scenario.", "5"),
        2,
        "description",
        "quote it",
    ),
    "list for mapping": (
        "name: x\ndescription: d\nlink: [sse]\n" + EXPECT + "\n",
        3,
        "link",
        "expected a mapping (got a list)",
    ),
    "null for mapping": (
        "name: x\ndescription: d\nlink:\n" + EXPECT + "\n",
        3,
        "link",
        "expected a mapping (got null)",
    ),
    "string for list": (
        _link("link: {framing: sse, payload: messages, consumer: {command: python}}"),
        3,
        "link.consumer.command",
        "expected a list",
    ),
    "list item of wrong type": (
        _link("link: {framing: sse, payload: messages, messages: {texts: [a, [b]]}}"),
        3,
        "link.messages.texts[1]",
        "expected a string (got a list)",
    ),
    "infinite float": (MINIMAL + "deadline_ms: .inf\n", 5, "deadline_ms", "finite"),
    # literals and vocabularies
    "bad literal": (
        _link("link: {framing: sce, payload: messages}"),
        3,
        "link.framing",
        "did you mean 'sse'",
    ),
    "bad literal lists the allowed": (
        _link("link: {framing: sse, payload: nothing}"),
        3,
        "link.payload",
        "'messages', 'envelope', 'tokens'",
    ),
    "bad fault literal": (
        _faults("  - {kind: kill, how: RST, at: {offset: 1}}\n"),
        6,
        "faults[0].how",
        "did you mean 'rst'",
    ),
    "bad direction": (
        _faults("  - {kind: kill, direction: down, at: {offset: 1}}\n"),
        6,
        "faults[0].direction",
        "'downstream', 'upstream'",
    ),
    "unknown verdict": (
        _expect("expect: {verdict: MESAGE_COMPLETE}"),
        4,
        "expect.verdict",
        "did you mean 'MESSAGE_COMPLETE'",
    ),
    "unknown error code in any_of": (
        _expect("expect:\n  any_of:\n    - COMPLETE_EXPLICIT\n    - ERR_TRUNCATED"),
        7,
        "expect.any_of[1]",
        "unknown verdict or error code 'ERR_TRUNCATED'",
    ),
    # constraints on one value
    "negative count": (
        _link("link: {framing: sse, payload: envelope, envelope: {records: -1}}"),
        3,
        "link.envelope.records",
        "must be >= 0 (got -1)",
    ),
    "zero timeout": (
        _link(
            "link: {framing: sse, payload: messages, consumer: {incomplete_message_timeout_ms: 0}}"
        ),
        3,
        "link.consumer.incomplete_message_timeout_ms",
        "must be > 0",
    ),
    "zero capacity": (
        _link("link: {framing: sse, payload: envelope, producer: {channel_capacity_chunks: 0}}"),
        3,
        "link.producer.channel_capacity_chunks",
        "must be >= 1 (got 0)",
    ),
    "bad name": (MINIMAL.replace("name: minimal", "name: Minimal Case"), 1, "name", "lowercase"),
    "bad upstream": (
        _link("link: {framing: sse, payload: messages, producer: {upstream: localhost}}"),
        3,
        "link.producer.upstream",
        "host:port",
    ),
    "empty command": (
        _link("link: {framing: sse, payload: messages, consumer: {command: []}}"),
        3,
        "link.consumer.command",
        "must not be empty",
    ),
    "empty description": (
        MINIMAL.replace("The smallest valid scenario.", "''"),
        2,
        "description",
        "must not be empty",
    ),
    # rules between keys (__post_init__)
    "sub-config of another payload": (
        _link("link:\n  framing: sse\n  payload: tokens\n  envelope: {records: 3}"),
        6,
        "link.envelope",
        "only for payload envelope",
    ),
    "texts and count": (
        _link("link: {framing: sse, payload: messages, messages: {texts: [a], count: 2}}"),
        3,
        "link.messages.texts",
        "not both",
    ),
    "an empty NDJSON message": (
        _link('link: {framing: ndjson, payload: messages, messages: {texts: [a, ""]}}'),
        3,
        "link.messages.texts[1]",
        "an NDJSON message is one line",
    ),
    "verdict and any_of": (
        _expect("expect:\n  verdict: MESSAGE_COMPLETE\n  any_of: [MESSAGE_COMPLETE]"),
        6,
        "expect.any_of",
        "not both",
    ),
    "empty expect": (_expect("expect: {}"), 4, "expect", "at least one of"),
    "max below min": (
        _expect("expect: {accepted_messages: {min: 5, max: 2}}"),
        4,
        "expect.accepted_messages.max",
        "must be >= min",
    ),
    # faults
    "unknown fault kind": (
        _faults("  - kind: kil\n    at: {offset: 1}\n"),
        6,
        "faults[0].kind",
        "did you mean 'kill'",
    ),
    "missing fault kind": (
        _faults("  - at: {offset: 1}\n"),
        6,
        "faults[0].kind",
        "corrupt, kill, latency",
    ),
    "fault not a mapping": (
        _faults("  - kill\n"),
        6,
        "faults[0]",
        "expected a mapping with a 'kind' key",
    ),
    "faults not a list": (MINIMAL + "faults: {kind: kill}\n", 5, "faults", "expected a list"),
    "fault rule on a field": (
        _faults("  - kind: latency\n    jitter_ms: 1\n    delay_ms: -5\n"),
        8,
        "faults[0].delay_ms",
        "must be >= 0 (got -5)",
    ),
    "fault rule without a field": (
        _faults("  - kind: latency\n    delay_ms: 1\n    jitter_ms: 2\n"),
        6,
        "faults[0]",
        "jitter may not exceed the delay",
    ),
    "fault rule on a nested key": (
        _faults("  - kind: corrupt\n    at:\n      frame: 101\n"),
        8,
        "faults[0].at.frame",
        "at most 100",
    ),
    "base fault rule": (
        _faults("  - {kind: kill, connection: -1, at: {offset: 0}}\n"),
        6,
        "faults[0].connection",
        "must be >= 0",
    ),
    # positions
    "two anchors": (
        _faults("  - kind: kill\n    at: {offset: 3, frame: 2}\n"),
        7,
        "faults[0].at",
        "exactly one of offset, frame, utf8_char, match, request_end, after_ms (got offset, frame)",
    ),
    "no anchor": (_faults("  - kind: kill\n    at: {}\n"), 7, "faults[0].at", "exactly one of"),
    "fraction out of range": (
        _faults("  - kind: kill\n    at:\n      frame: 2\n      fraction: 1.5\n"),
        9,
        "faults[0].at.fraction",
        "must be <= 1 (got 1.5)",
    ),
    "fraction without frame": (
        _faults("  - kind: kill\n    at: {offset: 2, fraction: 0.5}\n"),
        7,
        "faults[0].at.fraction",
        "only with frame",
    ),
    "frame counts from 1": (
        _faults("  - kind: kill\n    at: {frame: 0}\n"),
        7,
        "faults[0].at.frame",
        "must be >= 1",
    ),
    # YAML structure
    "duplicate key": (MINIMAL + "name: again\n", 5, "name", "duplicate key (first at line 1)"),
    "non-string key": (MINIMAL + "1: x\n", 5, "", "keys must be strings (got integer 1)"),
    "python tag": (
        MINIMAL + "source: !!python/object:os.system ls\n",
        5,
        "source",
        "unsupported YAML tag '!!python/object:os.system'",
    ),
    "custom tag on a mapping": (
        _link("link: !thing {framing: sse, payload: messages}"),
        3,
        "link",
        "unsupported YAML tag '!thing'",
    ),
    "merge of a scalar": (
        _link("link: {<<: 3, framing: sse, payload: messages}"),
        3,
        "link",
        "'<<' merges mappings only",
    ),
}


@pytest.mark.parametrize(
    ("text", "line", "path", "fragment"), list(CASES.values()), ids=list(CASES)
)
def test_each_mistake_is_reported_where_it_is(
    text: str, line: int, path: str, fragment: str
) -> None:
    [(got_line, got_path, message)] = issues(text)
    assert (got_line, got_path) == (line, path)
    assert fragment in message


FILE_LEVEL: dict[str, tuple[str, int, str, str]] = {
    "syntax error": ("name: x\nlink: {framing: [\n", 3, "", "YAML syntax error"),
    "bad indentation": ("name: x\n  description: d\n", 2, "", "YAML syntax error"),
    "two documents": (MINIMAL + "---\n" + MINIMAL, 5, "", "single document"),
    "undefined alias": (MINIMAL + "source: *nothing\n", 5, "", "undefined alias"),
    "empty text": ("", 0, "", "empty file"),
    "only a comment": ("# only a comment\n", 1, "", "no YAML document"),
    "scalar root": ("just text\n", 1, "", "expected a scenario (a mapping) or a list of them"),
    "empty list": ("[]\n", 1, "", "no scenarios"),
    "list item not a mapping": (
        _item(MINIMAL) + "- 3\n",
        5,
        "[1]",
        "expected a scenario (a mapping) (got integer 3)",
    ),
    "deep nesting": ("a: " + "[" * 5000 + "]" * 5000 + "\n", 1, "", "nest"),
    "deep nesting on line 3": ("a: 1\nb: 2\nc: " + "{a: " * 70 + "\n", 3, "", "nested more than"),
    "tagged root": ("!!python/object:x {}\n", 1, "", "unsupported YAML tag"),
    "control character": ("name: x\ndescription: \x07\n", 2, "", "YAML syntax error"),
}


@pytest.mark.parametrize(
    ("text", "line", "path", "fragment"), list(FILE_LEVEL.values()), ids=list(FILE_LEVEL)
)
def test_file_level_mistakes(text: str, line: int, path: str, fragment: str) -> None:
    [(got_line, got_path, message)] = issues(text)
    assert (got_line, got_path) == (line, path)
    assert fragment in message


def test_duplicate_names_in_a_list() -> None:
    text = _item(MINIMAL) + _item(MINIMAL)
    assert issues(text) == [(5, "name", "duplicate name 'minimal' (first at line 1)")]


SEVERAL = """\
- name: Bad
  description: 5
  link: {framing: sce, payload: tokens, envelope: {records: -1}, consumer: {read_bytes: true}}
  faults:
    - kind: kil
    - kind: latency
      delay_ms: -5
    - {kind: kill, at: {frame: 2, offset: 3}, hwo: rst}
  expect: {verdict: MESAGE_COMPLETE, any_of: [X]}
- name: fine
  description: d
  link: {framing: sse, payload: tokens, tokens: {count: 3}}
  expect: {}
- name: fine
  link: !!python/object:os.system {}
"""


def test_several_mistakes_in_one_file_are_all_reported_in_line_order() -> None:
    assert [(line, path) for line, path, _ in issues(SEVERAL)] == [
        (1, "name"),
        (2, "description"),
        (3, "link.framing"),
        (3, "link.envelope.records"),
        (3, "link.consumer.read_bytes"),
        (5, "faults[0].kind"),
        (7, "faults[1].delay_ms"),
        (8, "faults[2].hwo"),
        (8, "faults[2].at"),
        (9, "expect.verdict"),
        (9, "expect.any_of[0]"),
        (13, "expect"),
        (14, "name"),
        (14, "description"),
        (14, "expect"),
        (15, "link"),
    ]


def test_issues_render_as_file_line_key_message() -> None:
    with pytest.raises(ScenarioError) as caught:
        load(_faults("  - kind: latency\n    delay_ms: -5\n"), "scenarios/x.yaml")
    assert caught.value.issues == [
        SchemaIssue("scenarios/x.yaml", 7, "faults[0].delay_ms", "must be >= 0 (got -5)")
    ]
    assert str(caught.value) == "scenarios/x.yaml:7: faults[0].delay_ms: must be >= 0 (got -5)"
    assert str(SchemaIssue("f.yaml", 0, "", "empty file")) == "f.yaml: empty file"
    assert isinstance(caught.value, ValueError)


def test_an_alias_reported_twice_is_reported_once() -> None:
    """Two scenarios sharing a bad mapping by alias get one issue at the anchor's line."""
    text = """\
    - name: a
      description: d
      link: &bad {framing: nope, payload: messages}
      expect: {complete: true}
    - name: b
      description: d
      link: *bad
      expect: {complete: true}
    """
    assert where(text) == [(3, "link.framing")]


def test_billion_laughs_is_refused_where_it_grows_too_big() -> None:
    """Aliases nested 9 deep (10**9 strings if expanded) are refused while composing, at the
    alias that takes the document past MAX_NODES (the 7th level: 10**6 strings and more)."""
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    text = (
        "lol: {"
        + ", ".join(levels)
        + "}\n"
        + MINIMAL.replace(LINK, "link: {framing: sse, payload: messages, messages: {texts: *a9}}")
    )
    [(line, path, message)] = issues(text)
    assert (line, path) == (1, "")
    assert message == "YAML syntax error: aliases expand this document past 1000000 nodes"
