"""``tearline upgrade``'s core (``harness.scenario.upgrade``): the deprecated forms rewritten in
the text as the loader reads them, every other byte kept, and nothing written that does not
read back as the old file did."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from yaml.nodes import ScalarNode

from harness.config.issues import render_path
from harness.config.nodes import line_of
from harness.scenario import read_text
from harness.scenario.edits import Replace, Splice
from harness.scenario.upgrade import upgrade_text
from harness.scenario.versions import Finding, FormatRules, FormatVersion, Rewrite
from harness.scenario.views import ScenarioView

HEAD = """\
name: s   # the name
description: d
link: {framing: sse, payload: tokens, framing_options: {sse_body: close}}
expect: {complete: true}
faults:
"""


def test_line_endings_quoting_and_comments_are_kept() -> None:
    text = (HEAD + "  - kind: stall   # why\n    at: {frame: 2}\n    duration_ms: 10\n"
            "    heartbeat_text: \": ping\\n\\n\"\n").replace("\n", "\r\n")  # fmt: skip
    result = upgrade_text(text, "x.yaml")
    assert result.problems == ()
    assert result.text == text.replace(
        "    heartbeat_text:", "    heartbeat: raw\r\n    heartbeat_text:"
    )
    assert [(c.line, render_path(c.path)) for c in result.changes] == [
        (9, "faults[0].heartbeat_text")
    ]


def test_a_value_that_is_an_anchor_takes_the_rewrite_that_leaves_it_alone() -> None:
    text = (
        HEAD
        + '  - {kind: stall, at: {frame: 2}, duration_ms: 10, heartbeat_text: &b ": ping\\n"}\n'
    )
    result = upgrade_text(text, "x.yaml")
    assert result.text == text.replace("heartbeat_text: &b", "heartbeat: raw, heartbeat_text: &b")
    assert read_text(result.text, "x.yaml").warnings == ()


def test_what_cannot_be_rewritten_in_place_is_said_and_the_text_kept() -> None:
    explicit = HEAD + (
        "  - kind: stall\n    at: {frame: 2}\n    duration_ms: 10\n"
        '    ? heartbeat_text\n    : ": ping\\n\\n"\n'
    )
    result = upgrade_text(explicit, "x.yaml")
    assert (result.text, result.changes) == (explicit, ())
    assert [(p.line, p.key_path, p.message) for p in result.problems] == [
        (
            9,
            "faults[0].heartbeat_text",
            "cannot rewrite in place (an anchor that other keys alias): write `heartbeat: raw` "
            "before it by hand",
        )
    ]
    broken = upgrade_text("name: [\n", "x.yaml")
    assert (broken.text, [p.line for p in broken.problems]) == ("name: [\n", [2])


def test_a_file_in_the_current_form_is_left_as_it_is() -> None:
    text = HEAD + "  - {kind: stall, at: {frame: 2}, duration_ms: 10, heartbeat: sse-comment}\n"
    assert upgrade_text(text, "x.yaml") == upgrade_text(text, "x.yaml")
    result = upgrade_text(text, "x.yaml")
    assert (result.text, result.changes, result.problems, result.changed) == (text, (), (), False)


@dataclass(frozen=True)
class _Lying:
    """An edit whose text is not what it does to the nodes: the read-back must catch it."""

    inner: Replace

    def apply(self) -> bool:
        return self.inner.apply()

    def splices(self, text: str, newline: str) -> list[Splice] | None:
        start = int(self.inner.old.start_mark.index)
        return [Splice(start, int(self.inner.old.end_mark.index), "something-else")]


@dataclass(frozen=True)
class _LyingRename:
    id: str = "lying"
    since: str = "2027-01-01"
    up_to: int | None = None
    summary: str = "description -> summary"

    def find(self, view: ScenarioView) -> Iterator[Finding]:
        key, value = view.pairs(view.node)["description"]
        assert isinstance(value, ScalarNode)
        edit = _Lying(Replace(view.node, value, "another description"))
        yield Finding(self.id, line_of(key), ("description",), "d", Rewrite((edit,), "x"), key)


def test_a_rewrite_that_would_not_read_back_as_the_old_file_is_not_written() -> None:
    rules = FormatRules((FormatVersion(1, "d", "s"),), (_LyingRename(),))
    text = HEAD + "  - {kind: split, at: {frame: 2}}\n"
    result = upgrade_text(text, "x.yaml", formats=rules)
    assert (result.text, result.changes) == (text, ())
    assert [p.message for p in result.problems] == [
        "the rewritten text would not read as the old one does; the file is left as it was"
    ]
