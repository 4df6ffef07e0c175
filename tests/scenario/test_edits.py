"""Edits made in the nodes and in the text alike (``harness.scenario.edits``): values render
as YAML that reads back exactly, a key is inserted where it fits the layout, an anchored
value is never edited in place, and splices keep every other byte."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from harness.config.issues import Issues
from harness.config.nodes import Scalar, parse, scalar_value
from harness.scenario.edits import Insert, Replace, Splice, apply_splices, render, to_data


def _root(text: str) -> MappingNode:
    root = parse(text, Issues("t"))
    assert isinstance(root, MappingNode)
    return root


def _pair(node: MappingNode, key: str) -> tuple[ScalarNode, ScalarNode]:
    for k, v in node.value:
        if k.value == key:
            assert isinstance(v, ScalarNode)
            return k, v
    raise KeyError(key)


def _read(value_text: str) -> Scalar:
    _, value = _pair(_root(f"k: {value_text}\n"), "k")
    return scalar_value(value)


@given(st.text())
@example("\x85\u2028\u2029\ufeff\x00\x7f\U0001f600")  # line breaks YAML has, a BOM, controls
@example("yes")  # YAML 1.1 reads it plain as a boolean
@example("1e9")
@example(": ping\n\n")
def test_text_renders_as_yaml_that_reads_back_exactly(text: str) -> None:
    assert _read(render(text)) == text


def test_other_values_render_as_they_read() -> None:
    for value in (None, True, False, 0, -7, 2**64, 0.5, -1.25e-7):
        assert _read(render(value)) == value
    assert [render(v) for v in ("raw", "sse-comment", "a b", "null", "")] == [
        "raw",
        "sse-comment",
        '"a b"',
        '"null"',
        '""',
    ]


BLOCK = """\
- kind: stall      # a comment that stays
  heartbeat_text: x
  other: 1
"""


def test_a_key_is_inserted_on_a_line_of_its_own_in_a_block_mapping() -> None:
    root = parse(BLOCK, Issues("t"))
    assert isinstance(root, SequenceNode)
    fault = root.value[0]
    assert isinstance(fault, MappingNode)
    kind, _ = _pair(fault, "kind")
    text, _ = _pair(fault, "heartbeat_text")
    first = Insert(fault, kind, "heartbeat", "raw").splices(BLOCK, "\n")
    second = Insert(fault, text, "heartbeat", "raw").splices(BLOCK, "\n")
    assert first is not None and second is not None
    assert apply_splices(BLOCK, first) == (
        "- heartbeat: raw\n  kind: stall      # a comment that stays\n"
        "  heartbeat_text: x\n  other: 1\n"
    )
    assert apply_splices(BLOCK, second) == (
        "- kind: stall      # a comment that stays\n"
        "  heartbeat: raw\n  heartbeat_text: x\n  other: 1\n"
    )


def test_a_key_is_inserted_before_another_in_a_flow_mapping_and_with_crlf() -> None:
    text = "f: {kind: stall, heartbeat_text: x}\r\n"
    root = _root(text)
    fault = root.value[0][1]
    assert isinstance(fault, MappingNode)
    key, _ = _pair(fault, "heartbeat_text")
    splices = Insert(fault, key, "heartbeat", "raw").splices(text, "\r\n")
    assert splices is not None
    assert apply_splices(text, splices) == "f: {kind: stall, heartbeat: raw, heartbeat_text: x}\r\n"


def test_replacing_a_block_scalar_keeps_the_line_break_after_it() -> None:
    text = "a:\n  t: |\n    : ping\n  b: 2\n"
    inner = _root(text).value[0][1]
    assert isinstance(inner, MappingNode)
    key, value = _pair(inner, "t")
    splices = [
        *(Replace(inner, key, "heartbeat").splices(text, "\n") or []),
        *(Replace(inner, value, "sse-comment").splices(text, "\n") or []),
    ]
    assert apply_splices(text, splices) == "a:\n  heartbeat: sse-comment\n  b: 2\n"


def test_an_anchored_value_or_an_explicit_key_is_not_edited_in_place() -> None:
    text = "a: &x ': ping'\nb: *x\n? c\n: 1\n"
    root = _root(text)
    key_a, value_a = _pair(root, "a")
    key_c, _ = _pair(root, "c")
    assert Replace(root, value_a, "sse-comment").splices(text, "\n") is None
    assert Insert(root, key_c, "heartbeat", "raw").splices(text, "\n") is None
    assert Replace(root, key_a, "z").splices(text, "\n") == [Splice(0, 1, "z")]


def test_edits_in_the_nodes_replace_or_insert_once() -> None:
    root = _root("a: 1\nb: [x, y]\n")
    key_a, value_a = _pair(root, "a")
    items = root.value[1][1]
    assert isinstance(items, SequenceNode)
    assert Replace(root, value_a, "two").apply()
    assert Replace(items, items.value[1], 3).apply()
    assert Insert(root, key_a, "z", None).apply()
    assert to_data(root) == {
        "z": ("tag:yaml.org,2002:null", None),
        "a": ("tag:yaml.org,2002:str", "two"),
        "b": [("tag:yaml.org,2002:str", "x"), ("tag:yaml.org,2002:int", 3)],
    }
    assert not Replace(root, value_a, "again").apply()  # the old node is gone


def test_splices_apply_from_the_end_keep_their_order_and_refuse_overlaps() -> None:
    assert apply_splices("abcdef", [Splice(1, 1, "X"), Splice(1, 1, "Y"), Splice(4, 6, "")]) == (
        "aXYbcd"
    )
    assert apply_splices("abcdef", [Splice(1, 3, "X"), Splice(2, 4, "Y")]) is None
    assert apply_splices("abc", [Splice(0, 1, "z"), Splice(0, 1, "z")]) == "zbc"


def test_merges_are_made_in_data() -> None:
    root = _root("base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\n")
    data = to_data(root)
    assert isinstance(data, dict)
    assert data["use"] == {"x": ("tag:yaml.org,2002:int", 1), "y": ("tag:yaml.org,2002:int", 3)}
