"""The JSON Schema agrees with the loader: what the loader accepts it accepts, and it rejects
the mistakes a schema can express."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from harness.scenario import json_schema
from tests.scenario.test_loader import FULL
from tests.scenario.test_mistakes import CASES
from tests.scenario.test_sweep import CUT
from tests.scenario.toys import MINIMAL, REGISTRY, load

SCHEMA = json_schema(REGISTRY)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

ACCEPTED = {
    "full": FULL,
    "minimal": MINIMAL,
    "list": "- " + MINIMAL.rstrip("\n").replace("\n", "\n  ") + "\n",
    "sweeps": CUT + "  link.framing: [sse, grpc]\n  faults[0].at.offset: {from: 0, to: end}\n",
    "any_of and a range": MINIMAL.replace(
        "{verdict: MESSAGE_COMPLETE}",
        "{any_of: [PARTIAL_MID_TOKEN, IDLE_TIMEOUT], accepted_messages: 3}",
    ),
    "texts": MINIMAL.replace("payload: messages", "payload: messages, messages: {texts: [a, b]}"),
}


def _instance(text: str) -> Any:
    return yaml.safe_load(text)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    json.dumps(SCHEMA)  # plain JSON all the way down


@pytest.mark.parametrize("text", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_what_the_loader_accepts_the_schema_accepts(text: str) -> None:
    assert load(text)
    assert list(VALIDATOR.iter_errors(_instance(text))) == []


# Mistakes of test_mistakes that only the loader sees: YAML-level ones (tags, duplicate keys,
# merges, quoting), a float where JSON Schema's "integer" also takes 1.0, max >= min (a schema
# cannot compare two values), the faults' own __post_init__ rules, and a rule that depends on
# another key's value (NDJSON lines).
LOADER_ONLY = {
    "max below min",
    "base fault rule",
    "float for int",
    "infinite float",
    "int for string",
    "duplicate key",
    "non-string key",
    "python tag",
    "custom tag on a mapping",
    "merge of a scalar",
    "fault rule on a field",
    "fault rule without a field",
    "fault rule on a nested key",
    "string for int",
    "an empty NDJSON message",
}
REJECTED = {name: case[0] for name, case in CASES.items() if name not in LOADER_ONLY}


@pytest.mark.parametrize("text", list(REJECTED.values()), ids=list(REJECTED))
def test_what_the_schema_can_express_it_rejects(text: str) -> None:
    assert not VALIDATOR.is_valid(_instance(text))


def test_a_bad_sweep_key_and_an_empty_range_step_are_rejected() -> None:
    assert not VALIDATOR.is_valid(_instance(CUT + "  'faults[x]': [1]\n"))
    assert not VALIDATOR.is_valid(_instance(CUT + "  seed: {from: 0, to: 3, step: 0}\n"))
    assert not VALIDATOR.is_valid(_instance(CUT + "  seed: []\n"))


def test_every_object_is_closed_and_documented_by_its_class() -> None:
    for name, definition in SCHEMA["$defs"].items():
        assert definition["additionalProperties"] is False, name
    assert SCHEMA["$defs"]["Link"]["description"] == (
        "A framing carrying a payload, between a producer and a consumer."
    )


def test_field_comments_become_descriptions_and_defaults_are_given() -> None:
    deadline = SCHEMA["$defs"]["Scenario"]["properties"]["deadline_ms"]
    assert deadline == {
        "description": "time limit of each case, in milliseconds",
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": 600000.0,
        "default": 10000.0,
    }


def test_literals_become_enums_and_faults_a_one_of_by_kind() -> None:
    link = SCHEMA["$defs"]["Link"]["properties"]
    assert link["framing"]["enum"] == [
        "length-prefixed",
        "ndjson",
        "sse",
        "websocket",
        "grpc",
        "ndjson-http",
    ]
    faults = SCHEMA["$defs"]["Scenario"]["properties"]["faults"]
    assert faults["items"] == {
        "oneOf": [
            {"$ref": "#/$defs/fault-corrupt"},
            {"$ref": "#/$defs/fault-kill"},
            {"$ref": "#/$defs/fault-latency"},
        ]
    }
    kill = SCHEMA["$defs"]["fault-kill"]
    assert kill["properties"]["kind"] == {"const": "kill"}
    assert kill["required"] == ["kind", "at"]
    assert kill["properties"]["how"]["enum"] == ["rst", "fin", "half"]


def test_the_default_schema_has_the_real_faults() -> None:
    schema = json_schema()
    text = MINIMAL + "faults: [{kind: kill, how: rst, at: {frame: 7, fraction: 0.5}}]\n"
    assert jsonschema.Draft202012Validator(schema).is_valid(_instance(text))
    assert not jsonschema.Draft202012Validator(schema).is_valid(
        _instance(text.replace("rst", "rest"))
    )
    assert "fault-kill" in schema["$defs"]
