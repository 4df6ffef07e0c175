"""The generic validator on its own: any frozen dataclass of the supported field types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config.constraints import Ge, OneOf
from harness.config.docs import field_docs
from harness.config.fields import yaml_key
from harness.config.issues import Issues, KeyPath, render_path
from harness.config.paths import parse_path
from harness.config.validate import INVALID, Rules, Tagged, Validator


class Shape:
    """The base of a toy family."""


@dataclass(frozen=True, slots=True)
class Circle(Shape):
    kind: ClassVar[str] = "circle"
    radius: Annotated[float, Ge(0)]


@dataclass(frozen=True, slots=True)
class Polygon(Shape):
    """A family member that keeps its kind as a field."""

    kind: str
    sides: tuple[Annotated[int, Ge(3)], ...] = ()


@dataclass(frozen=True, slots=True)
class Drawing:
    #: the shapes, back to front
    shapes: tuple[Shape, ...]
    start: int = field(default=0, metadata=yaml_key("from"))  #: renamed key
    size: int | Literal["auto"] = "auto"
    mode: Literal[1, 2] = 1
    tags: tuple[Annotated[str, OneOf(("red", "green"), what="colour")], ...] = ()
    note: str | None = None


RULES = Rules(families={Shape: Tagged("shape", {"circle": Circle, "polygon": Polygon})})


def _validate(text: str, hint: Any = Drawing) -> tuple[Any, list[tuple[int, str, str]]]:
    issues = Issues("t.yaml")
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert node is not None
    value = Validator(issues, RULES).value(node, hint, (), 1)
    return value, [(i.line, i.key_path, i.message) for i in issues.items]


def test_a_tagged_family_with_renamed_keys_and_scalar_unions() -> None:
    text = "shapes: [{kind: circle, radius: 1}, {kind: polygon, sides: [3, 4]}]\nfrom: 2\nsize: 5\n"
    value, problems = _validate(text + "mode: 2\ntags: [red]\nnote: null\n")
    assert problems == []
    assert value == Drawing(
        shapes=(Circle(1.0), Polygon("polygon", (3, 4))), start=2, size=5, mode=2, tags=("red",)
    )


def test_family_and_union_mistakes() -> None:
    text = "shapes: [{kind: polygon, sides: [3, 2]}, {kind: square}, {radius: 1}]\nsize: autox\n"
    value, problems = _validate(text + "mode: '1'\ntags: [blue]\n")
    assert value is INVALID
    assert problems == [
        (1, "shapes[0].sides[1]", "must be >= 3 (got 2)"),
        (1, "shapes[1].kind", "unknown shape kind 'square'; expected one of 'circle', 'polygon'"),
        (1, "shapes[2].kind", "required key missing (shape kinds: circle, polygon)"),
        (2, "size", "must be one of 'auto' (got 'autox'); did you mean 'auto'?"),
        (3, "mode", "must be one of 1, 2 (got '1')"),
        (4, "tags[0]", "unknown colour 'blue'; expected one of 'red', 'green'"),
    ]


def test_a_value_of_no_member_of_a_union() -> None:
    _, problems = _validate("shapes: []\nsize: 1.5\n")
    assert problems == [(2, "size", "expected an integer or one of 'auto' (got number 1.5)")]


def test_an_unsupported_field_type_is_a_programming_error() -> None:
    @dataclass(frozen=True)
    class Bad:
        table: dict[str, int]

    with pytest.raises(TypeError, match="unsupported field type"):
        _validate("table: {a: 1}\n", Bad)


def test_field_docs_come_from_comments_above_or_beside_a_field() -> None:
    assert field_docs(Drawing) == {"shapes": "the shapes, back to front", "start": "renamed key"}


@settings(max_examples=50)
@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_yaml_ints_are_ints_and_floats_never_bools(number: int) -> None:
    assert _validate(str(number), int) == (number, [])
    value, _ = _validate(str(number), float)
    assert (value, type(value)) == (float(number), float)
    assert _validate("true", int)[1] == [(1, "", "expected an integer (got boolean true)")]


paths = st.lists(
    st.one_of(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), st.integers(0, 99)),
    min_size=1,
    max_size=6,
).filter(lambda parts: isinstance(parts[0], str))


@settings(max_examples=100)
@given(paths)
def test_key_paths_render_and_parse_back(parts: list[str | int]) -> None:
    path: KeyPath = tuple(parts)
    assert parse_path(render_path(path)) == path
