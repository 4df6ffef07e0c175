"""A hunted scenario as an ordinary scenario file: plain mappings, keys in the documented order
(``docs/scenario-format.md``), settings left at their defaults left out. Pure (text in, text out;
the command writes the file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import Enum
from typing import Any

import yaml

from harness.config.fields import yaml_fields
from harness.faults.config import Fault
from harness.scenario.model import Scenario

#: top-level keys, in the order the format documents them
TOP_LEVEL = (
    "name",
    "description",
    "source",
    "link",
    "faults",
    "expect",
    "seed",
    "deadline_ms",
    "exclusive",
)


#: characters a YAML reader takes for line breaks, or that plain and single-quoted text cannot
#: carry: a text holding one is written double-quoted, with escapes
_NEEDS_ESCAPES = frozenset("\x85\u2028\u2029\ufeff") | {chr(c) for c in range(0x20)} | {"\x7f"}


class _Dumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that writes texts with line-break characters (NEL, U+2028) or
    control characters double-quoted: PyYAML would write NEL raw, and a reader folds it."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = '"' if _NEEDS_ESCAPES.intersection(text) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _text)


def plain(value: object) -> Any:
    """A model value as YAML data: dataclasses as mappings of the keys that differ from their
    defaults (required keys always), tuples as lists, whole floats as integers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        kind = getattr(type(value), "kind", None)
        if isinstance(kind, str):
            out["kind"] = kind
        for f in yaml_fields(type(value)).values():
            if f.custom:
                continue
            item = getattr(value, f.name)
            if f.required or item != f.default:
                out[f.key] = plain(item)
        return out
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Enum):  # a StrEnum name (FramingName): its text
        return value.value
    return value


def fault_document(fault: Fault) -> dict[str, Any]:
    document: dict[str, Any] = plain(fault)
    return document


def document(scenario: Scenario) -> dict[str, Any]:
    """The scenario as the mapping a scenario file holds."""
    whole: dict[str, Any] = plain(scenario)
    whole["faults"] = [fault_document(f) for f in scenario.faults]
    return {key: whole[key] for key in TOP_LEVEL if key in whole}


def dump(scenarios: Sequence[Scenario], comment: str = "") -> str:
    """YAML text: one scenario as a mapping, several as a list; ``comment`` lines first."""
    documents = [document(s) for s in scenarios]
    body = yaml.dump(
        documents[0] if len(documents) == 1 else documents,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=None,
    )
    head = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    return head + body
