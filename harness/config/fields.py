"""How a dataclass appears in YAML: its keys, their types, which are required.

Every dataclass field is a YAML key of the same name, except:

- ``ClassVar`` annotations (not fields at all) and ``init=False`` fields;
- fields with ``metadata=INTERNAL`` (bookkeeping such as where a scenario came from);
- fields with ``metadata=CUSTOM``: YAML keys read by dedicated code, not the generic validator
  (the scenario's ``sweep``, whose values are typed by the keys they name);
- ``metadata=yaml_key("from")`` renames the key (``from`` is a Python keyword).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, get_type_hints

INTERNAL: dict[str, Any] = {"internal": True}
CUSTOM: dict[str, Any] = {"custom": True}


def yaml_key(key: str) -> dict[str, Any]:
    """Field metadata naming the YAML key of a field when it cannot be the field's name."""
    return {"key": key}


@dataclass(frozen=True, slots=True)
class YamlField:
    """One YAML key of a dataclass."""

    name: str
    key: str
    hint: Any
    required: bool
    #: the default value (``dataclasses.MISSING`` when required)
    default: Any
    custom: bool


@functools.cache
def yaml_fields(cls: type) -> dict[str, YamlField]:
    """The YAML keys of dataclass ``cls``, in declaration order (cached: type hints are slow)."""
    hints = get_type_hints(cls, include_extras=True)
    found: dict[str, YamlField] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("internal"):
            continue
        default: Any = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        key = f.metadata.get("key", f.name)
        required = default is dataclasses.MISSING
        found[key] = YamlField(
            f.name, key, hints[f.name], required, default, bool(f.metadata.get("custom"))
        )
    return found


def key_of(cls: type, name: str) -> str | None:
    """The YAML key of attribute ``name`` of ``cls``, or None if it has none."""
    for field in yaml_fields(cls).values():
        if field.name == name:
            return field.key
    return None
