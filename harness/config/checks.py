"""Check a built config object against the constraints its field types carry.

The loader checks each value as it reads YAML (with the line to point at); objects built in
code (a test, the proxy's control API, a sweep rebuilding a scenario) are checked here, from the
same ``Annotated`` constraints, so a rule is written once whoever builds the object.
"""

from __future__ import annotations

import math
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from harness.config.fields import yaml_fields
from harness.errors import FieldError


def check_fields(obj: object) -> None:
    """Raise ``FieldError`` (path: the field's key) for the first field whose value breaks a
    constraint of its type, or is a float that is not finite."""
    cls: Any = type(obj)
    for key, info in yaml_fields(cls).items():
        if info.custom:
            continue
        problem = value_problem(getattr(obj, info.name), info.hint)
        if problem is not None:
            raise FieldError(problem, path=(key,))


def value_problem(value: Any, hint: Any) -> str | None:
    """What breaks a constraint of ``hint`` in ``value`` (assumed of the right type), or None."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *constraints = get_args(hint)
        problem = value_problem(value, base)
        return problem or next((p for c in constraints if (p := c.check(value)) is not None), None)
    if origin in (Union, UnionType):
        options = [a for a in get_args(hint) if a is not NoneType]
        if value is None:
            return None
        fitting = [a for a in options if _fits(value, a)]
        return value_problem(value, fitting[0]) if fitting else None
    if origin is tuple and isinstance(value, tuple):
        item = get_args(hint)[0]
        return next((p for v in value if (p := value_problem(v, item)) is not None), None)
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number (got {value!r})"
    return None


def _fits(value: Any, hint: Any) -> bool:
    base = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    origin = get_origin(base) or base
    if origin is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(origin, type):
        return isinstance(value, origin)
    return True  # Literal and the like: the loader checked the type
