"""JSON Schema (draft 2020-12) of scenario files, generated from the model dataclasses.

For editors and CI linters; the loader stays the authority (its messages are better, and a
few rules, such as swept values fitting the key they sweep, are beyond a schema). Each
dataclass becomes a ``$defs`` entry with ``additionalProperties: false``; ``Literal`` becomes
``enum``; ``Annotated`` constraints become ``minimum``/``pattern``/...; faults are a ``oneOf``
of one entry per kind, told apart by ``kind: {const: ...}``. Descriptions come from class
docstrings and ``#:`` comments above fields; rules between fields are restated in ``_EXTRAS``.
"""

from __future__ import annotations

import dataclasses
import enum
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from harness.config.docs import class_doc, field_docs
from harness.config.fields import yaml_fields
from harness.config.paths import PATH_PATTERN
from harness.faults.config import Fault
from harness.faults.position import POSITION_SCHEMA, Position
from harness.faults.registry import FaultRegistry
from harness.scenario.formats import CURRENT_FORMAT, FORMAT_RULES
from harness.scenario.loader import default_registry
from harness.scenario.model import Expect, Link, MessagesConfig, Scenario, Span
from harness.scenario.versions import FORMAT_KEY
from reference_impl.payload import PAYLOAD_NAMES

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean", NoneType: "null"}

_STREAM_KEYS = ("verdict", "any_of", "complete", "accepted_messages")

# Rules between fields that the classes enforce in __post_init__, said again for the schema.
_EXTRAS: dict[type, dict[str, Any]] = {
    Position: POSITION_SCHEMA,
    Expect: {
        "not": {"required": ["verdict", "any_of"]},
        "oneOf": [  # a stream's expectation, or an MCP session's alone
            {
                "anyOf": [
                    {"required": [key]}
                    for key in ("verdict", "any_of", "complete", "accepted_messages")
                ],
                "not": {"required": ["session"]},
            },
            {
                "required": ["session"],
                "not": {"anyOf": [{"required": [key]} for key in _STREAM_KEYS]},
            },
        ],
    },
    Link: {
        "allOf": [
            {
                "if": {"properties": {"payload": {"const": payload}}, "required": ["payload"]},
                "then": {
                    "not": {"anyOf": [{"required": [o]} for o in PAYLOAD_NAMES if o != payload]}
                },
            }
            for payload in PAYLOAD_NAMES
        ]
    },
    MessagesConfig: {
        "not": {
            "required": ["texts"],
            "anyOf": [{"required": ["count"]}, {"required": ["size_bytes"]}],
        }
    },
}


def json_schema(faults: FaultRegistry | None = None) -> dict[str, Any]:
    """The JSON Schema of a scenario file with these fault kinds (default: all of them)."""
    builder = _Builder(faults if faults is not None else default_registry())
    scenario = builder.ref(Scenario)
    return {
        "$schema": DRAFT,
        "title": f"tearline scenario file, format {CURRENT_FORMAT}",
        "description": (
            f"One scenario, or a list of scenarios, in version {CURRENT_FORMAT} of the format "
            "(docs/scenario-format.md#format-versions)."
        ),
        "anyOf": [scenario, {"type": "array", "items": scenario, "minItems": 1}],
        "$defs": builder.defs,
    }


class _Builder:
    """Collects ``$defs`` while turning type hints into schemas."""

    def __init__(self, faults: FaultRegistry) -> None:
        self.faults = faults
        self.defs: dict[str, Any] = {}

    def of(self, hint: Any) -> dict[str, Any]:
        origin = get_origin(hint)
        if origin is Annotated:
            base, *constraints = get_args(hint)
            schema = self.of(base)
            for constraint in constraints:
                schema |= constraint.schema(schema.get("type", ""))
            return schema
        if hint is Fault:
            return {"oneOf": [self.ref(cls, kind) for kind, cls in sorted(self.faults.items())]}
        if origin in (Union, UnionType):
            return {"anyOf": [self.of(option) for option in get_args(hint)]}
        if origin is Literal:
            return {"enum": list(get_args(hint))}
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return {"type": "string", "enum": [member.value for member in hint]}
        if origin is tuple:
            return {"type": "array", "items": self.of(get_args(hint)[0])}
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.ref(hint)
        return {"type": _JSON_TYPES[hint]}

    def ref(self, cls: type, kind: str | None = None) -> dict[str, Any]:
        """A ``$ref`` to the definition of ``cls`` (as fault ``kind``), defining it once."""
        name = f"fault-{kind}" if kind else cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # claimed first, so a class that refers to itself terminates
            self.defs[name] = self._object(cls, kind)
        return {"$ref": f"#/$defs/{name}"}

    def _object(self, cls: type, kind: str | None) -> dict[str, Any]:
        docs = field_docs(cls)
        properties: dict[str, Any] = {"kind": {"const": kind}} if kind else {}
        required = ["kind"] if kind else []
        for key, info in yaml_fields(cls).items():
            prop = self._custom(key) if info.custom else self.of(info.hint)
            if info.name in docs:
                prop = {"description": docs[info.name], **prop}
            if not info.required and not info.custom and _is_json(info.default):
                prop["default"] = _to_json(info.default)
            properties[key] = prop | ({"const": kind} if key == "kind" and kind else {})
            if info.required:
                required.append(key)
        schema: dict[str, Any] = {"type": "object"}
        if (doc := class_doc(cls)) is not None:
            schema["description"] = doc
        schema |= {"properties": properties, "additionalProperties": False}
        if required:
            schema["required"] = required
        if cls in _EXTRAS:
            schema["allOf"] = [_EXTRAS[cls]]
        return schema

    def _custom(self, key: str) -> dict[str, Any]:
        """The keys read by code of their own: ``format`` and ``sweep``."""
        if key == FORMAT_KEY:
            return {"type": "integer", "minimum": FORMAT_RULES.oldest, "maximum": CURRENT_FORMAT}
        return self._sweep()

    def _sweep(self) -> dict[str, Any]:
        return {
            "type": "object",
            "propertyNames": {"pattern": PATH_PATTERN},
            "additionalProperties": {"anyOf": [{"type": "array", "minItems": 1}, self.ref(Span)]},
        }


def _is_json(value: object) -> bool:
    if isinstance(value, tuple):
        return all(_is_json(item) for item in value)
    return value is None or isinstance(value, bool | int | float | str)


def _to_json(value: object) -> object:
    return [_to_json(item) for item in value] if isinstance(value, tuple) else value
