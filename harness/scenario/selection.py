"""``-k EXPR``: pick cases by id, pytest style: words are substrings of the case id, combined
with ``and``, ``or``, ``not`` and parentheses."""

from __future__ import annotations

import re

from harness.errors import SelectionError

__all__ = ["SelectionError", "matches"]

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def matches(expression: str, case_id: str) -> bool:
    words: list[str] = []
    for token in _TOKEN.findall(expression):
        if token in ("and", "or", "not", "(", ")"):
            words.append(token)
        else:
            words.append("True" if token in case_id else "False")
    if not words:
        return True
    try:
        result = eval(" ".join(words), {"__builtins__": {}}, {})
    except SyntaxError:
        raise SelectionError(f"-k: cannot parse {expression!r}") from None
    return bool(result)
