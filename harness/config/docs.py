"""User documentation of config fields, read from the source once (for the scenario reference,
the JSON Schema and ``tearline schema``).

A field's text is the ``#:`` comment above it (or at the end of its line), else its
``- ``name``: text`` line in the docstring of its class or a base class (the faults' style;
indented lines continue the entry; a subclass's text wins).
"""

from __future__ import annotations

import dataclasses
import inspect
import re

_FIELD_DOC = re.compile(r"^- ``(\w+)``: (.*)$")
_FIELD_LINE = re.compile(r"([A-Za-z_]\w*)\s*:(?!:)")


_CACHE: dict[type, dict[str, str]] = {}  # reading source is slow: once per class


def field_docs(cls: type) -> dict[str, str]:
    """``{field: text}`` for the documented fields of ``cls``, in the order of its fields."""
    if cls not in _CACHE:
        docs = _docstring_docs(cls) | _comment_docs(cls)
        order = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
        _CACHE[cls] = {name: docs[name] for name in order if name in docs} | docs
    return _CACHE[cls]


def class_doc(cls: type) -> str | None:
    """The class docstring, unless it is the signature dataclasses writes when there is none."""
    doc = cls.__doc__
    if doc is None or doc.startswith(f"{cls.__name__}("):
        return None
    return inspect.cleandoc(doc)


def _docstring_docs(cls: type) -> dict[str, str]:
    docs: dict[str, str] = {}
    for klass in cls.__mro__:
        last = ""
        for line in inspect.cleandoc(klass.__dict__.get("__doc__") or "").splitlines():
            found = _FIELD_DOC.match(line)
            if found:
                last = found[1] if found[1] not in docs else ""
                if last:
                    docs[last] = found[2]
            elif last and line.startswith("  ") and line.strip():
                docs[last] += " " + line.strip()
            else:
                last = ""
    return docs


def _comment_docs(cls: type) -> dict[str, str]:
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):  # a class made at run time has no source
        return {}
    docs: dict[str, str] = {}
    pending: list[str] = []
    for line in lines:
        text = line.strip()
        if text.startswith("#:"):
            pending.append(text[2:].strip())
            continue
        match = _FIELD_LINE.match(text)
        trailing = text.split("#:", 1)[1].strip() if "#:" in text else ""
        if match and (pending or trailing):
            docs.setdefault(match[1], " ".join([*pending, trailing]).strip())
        pending = []
    return docs
