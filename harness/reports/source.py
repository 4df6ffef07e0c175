"""The YAML text of a scenario, cut from its file, for the report's "scenario source" panel.

The file is composed again (safely, as the loader does) to find where the scenario's mapping
starts and ends; a file that changed or vanished since the run simply yields no source.
"""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup, escape
from yaml import MappingNode, Node, SafeLoader, SequenceNode, YAMLError, compose


class SourceReader:
    """Scenario sources by (file, line), reading and composing each file once."""

    def __init__(self) -> None:
        self._spans: dict[str, dict[int, str]] = {}
        self._escaped: dict[tuple[str, int], Markup] = {}

    def source(self, file: str, line: int) -> str:
        """The lines of the scenario that starts at ``line`` of ``file``, or ''."""
        if file not in self._spans:
            self._spans[file] = _scenarios(file)
        return self._spans[file].get(line, "")

    def html(self, file: str, line: int) -> Markup:
        """``source``, escaped for HTML once per scenario (a sweep's cases share it)."""
        key = (file, line)
        if key not in self._escaped:
            self._escaped[key] = escape(self.source(file, line))
        return self._escaped[key]


def _scenarios(file: str) -> dict[int, str]:
    try:
        text = Path(file).read_text(encoding="utf-8-sig")
        root: Node | None = compose(text, Loader=SafeLoader)
    except (OSError, UnicodeDecodeError, YAMLError, RecursionError):
        return {}
    lines = text.splitlines()
    nodes = root.value if isinstance(root, SequenceNode) else [root]
    found = {}
    for node in nodes:
        if isinstance(node, MappingNode):
            first = int(node.start_mark.line)
            end = int(node.end_mark.line) + (1 if node.end_mark.column else 0)
            found[first + 1] = "\n".join(lines[first:end]).rstrip()
    return found
