"""docs/scenario-format.md documents every key of the model, and its examples load."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
import yaml

from harness.config.fields import yaml_fields
from harness.config.paths import base_type
from harness.faults.position import Position
from harness.scenario import Scenario, Span, expand, json_schema, load_text
from tests.scenario.toys import FixedShape

DOC = (Path(__file__).resolve().parents[2] / "docs" / "scenario-format.md").read_text()
SCHEMA = jsonschema.Draft202012Validator(json_schema())
EXAMPLES = [
    block
    for block in re.findall(r"```yaml\n(.*?)```", DOC, re.DOTALL)
    if re.sub(r"^format: .*\n", "", block).startswith(("name:", "- name:"))
]


def _classes(cls: type, seen: dict[type, None]) -> dict[type, None]:
    """``cls`` and every dataclass reachable through its fields, in order."""
    seen[cls] = None
    for info in yaml_fields(cls).values():
        if info.custom:  # the sweep: documented by its own table (Span)
            continue
        for hint in (info.hint, *get_args(base_type(info.hint))):
            found = base_type(hint)
            if isinstance(found, type) and dataclasses.is_dataclass(found) and found not in seen:
                _classes(found, seen)
    return seen


def _documented_keys() -> set[str]:
    return set(re.findall(r"^ *\| `([a-z0-9_]+)` \|", DOC, re.MULTILINE))


@pytest.mark.parametrize("cls", [*_classes(Scenario, {}), Span, Position], ids=lambda c: c.__name__)
def test_every_key_has_a_row_in_the_reference(cls: type) -> None:
    keys: dict[str, Any] = yaml_fields(cls)
    assert set(keys) - _documented_keys() == set()


def test_every_payload_has_a_complete_example() -> None:
    payloads = {re.search(r"payload: (\w+)", block)[1] for block in EXAMPLES}  # type: ignore[index]
    assert {"envelope", "messages", "tokens"} <= payloads


@pytest.mark.parametrize("text", EXAMPLES, ids=[b.split("\n", 1)[0] for b in EXAMPLES])
def test_the_examples_load_with_the_real_faults_and_expand(text: str) -> None:
    scenarios = load_text(text, "docs/example.yaml")
    for scenario in scenarios:
        assert expand(scenario, lambda _: FixedShape(100, 10))
    assert SCHEMA.is_valid(yaml.safe_load(text))
