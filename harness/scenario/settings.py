"""``tearline.yaml``: what the scenario files of a folder share, for now the format version
they are written in (``format: 1``).

It applies to the files beside it and, within a git repository, to those in the folders below
it: a file's settings are those of the nearest ``tearline.yaml`` found from its own folder up to
the top of its repository (the folder holding ``.git``). Outside a repository only the file's own
folder is looked at, so that no file far above (``/tmp/tearline.yaml``) changes how it is read.
A scenario's own ``format`` key wins over its folder's.

A settings file that is wrong is reported once, and the files it governs are not read: reading
them in another version than the one meant could change what they mean.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from yaml.nodes import MappingNode

from harness.config.issues import Issues, SchemaIssue
from harness.config.nodes import describe, line_of, mapping_pairs, parse
from harness.scenario.sources import SETTINGS_NAMES, source
from harness.scenario.versions import FORMAT_KEY, FormatRules


@dataclass(frozen=True, slots=True)
class Settings:
    """One ``tearline.yaml``, read."""

    file: str
    #: the format its folder's files are written in (None: not said)
    format: int | None = None


def read_settings(
    text: str | bytes, file: str, rules: FormatRules
) -> tuple[Settings | None, list[SchemaIssue]]:
    """The settings in ``text``, or the issues saying what is wrong with them."""
    issues = Issues(file)
    root = parse(text, issues)
    settings: Settings | None = None
    if root is not None and not isinstance(root, MappingNode):
        message = f"expected a mapping of settings (got {describe(root)})"
        issues.add(line_of(root), (), message)
    elif root is not None:
        pairs = mapping_pairs(root, (), issues)
        for key, (key_node, _) in pairs.items():
            if key != FORMAT_KEY:
                issues.add(line_of(key_node), (key,), f"unknown key (expected only {FORMAT_KEY!r})")
        version = None
        if FORMAT_KEY in pairs:
            version, problem = rules.read(pairs[FORMAT_KEY][1])
            if problem is not None:
                issues.add(line_of(pairs[FORMAT_KEY][1]), (FORMAT_KEY,), problem)
        settings = Settings(file, version)
    problems = issues.listed()
    return (None, problems) if problems else (settings, [])


@dataclass
class SettingsFinder:
    """Finds the settings of scenario files, reading each ``tearline.yaml`` once."""

    rules: FormatRules
    _read: dict[str, tuple[Settings | None, list[SchemaIssue]]] = field(default_factory=dict)
    #: folder -> the settings file that governs its files (None: none), found once
    _governs: dict[str, str | None] = field(default_factory=dict)

    def of_file(self, path: Path) -> tuple[Settings | None, list[SchemaIssue]]:
        """The settings that govern the scenario file ``path`` (None: none), or the issues
        of the settings file that should, when it is wrong."""
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in self._governs:
            self._governs[folder] = _governing(folder)
        found = self._governs[folder]
        return self.read(found) if found is not None else (None, [])

    def read(self, file: str) -> tuple[Settings | None, list[SchemaIssue]]:
        """One settings file, read once per finder."""
        if file not in self._read:
            data, problems = source(Path(file))
            found = read_settings(data, file, self.rules) if data is not None else (None, problems)
            self._read[file] = found
        return self._read[file]

    def read_so_far(self) -> dict[str, tuple[Settings | None, list[SchemaIssue]]]:
        """Every settings file read, by name."""
        return dict(self._read)


def _governing(folder: str) -> str | None:
    """The settings file nearest to ``folder`` that governs its files, or None."""
    for candidate_folder in _folders(folder):
        for name in SETTINGS_NAMES:
            candidate = os.path.join(candidate_folder, name)
            if os.path.isfile(candidate):
                return candidate
    return None


def _folders(folder: str) -> list[str]:
    """The folders whose settings may govern the files of ``folder``: itself, then up to its
    repository's top (only itself outside a repository)."""
    chain = [folder]
    while not os.path.exists(os.path.join(chain[-1], ".git")):
        parent = os.path.dirname(chain[-1])
        if parent == chain[-1]:
            return [folder]  # not in a repository
        chain.append(parent)
    return chain
