"""Loading scenario files: safe YAML, complete validation, one ScenarioError with every issue.

A file holds one scenario (a mapping) or a list of them. Everything wrong in a file (or in all
the files of ``load_paths``) is collected before anything is raised, each issue with its file,
line and key path. The fault registry (``kind`` -> fault config class) is a parameter so tests can
bring their own; by default it is ``harness.faults.FAULTS``, imported only when needed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.faults.config import Fault
from harness.scenario.errors import Issues, ScenarioError, SchemaIssue
from harness.scenario.model import Origin, Scenario, SweepAxis
from harness.scenario.nodes import Pairs, describe, line_of, mapping_pairs, parse, tag_problem
from harness.scenario.sweep import read_sweep
from harness.scenario.validate import INVALID, Rules, Tagged, Validator

#: Fault kind -> its frozen config dataclass.
FaultRegistry = Mapping[str, type]
StrPath = str | os.PathLike[str]


def default_registry() -> FaultRegistry:
    """``harness.faults.FAULTS``, imported on first use."""
    from harness.faults import FAULTS  # noqa: PLC0415 - lazy: tests inject their own registry

    registry: FaultRegistry = FAULTS
    return registry


def rules_for(faults: FaultRegistry) -> Rules:
    """The validator rules of scenario files with these fault kinds."""
    return Rules(families={Fault: Tagged("fault", faults)})


def load_text(
    text: str, file: str = "<string>", *, faults: FaultRegistry | None = None
) -> list[Scenario]:
    """The scenarios of YAML ``text``; ``file`` names it in issues. Raises ScenarioError."""
    scenarios, issues = _read(text, file, faults if faults is not None else default_registry())
    if issues:
        raise ScenarioError(issues)
    return scenarios


def load_file(path: StrPath, *, faults: FaultRegistry | None = None) -> list[Scenario]:
    """The scenarios of one file. Raises ScenarioError listing every mistake in it."""
    scenarios, issues = _load(Path(path), faults if faults is not None else default_registry())
    if issues:
        raise ScenarioError(issues)
    return scenarios


def load_paths(paths: Iterable[StrPath], *, faults: FaultRegistry | None = None) -> list[Scenario]:
    """The scenarios of files and directories (searched recursively for ``*.yaml`` and
    ``*.yml``, in sorted order). Raises one ScenarioError listing the mistakes of all files."""
    registry = faults if faults is not None else default_registry()
    if isinstance(paths, str | os.PathLike):  # one path, not an iterable of characters
        paths = [paths]
    files, issues = _files(paths)
    scenarios: list[Scenario] = []
    for file in files:
        found, problems = _load(file, registry)
        scenarios += found
        issues += problems
    issues += _colliding_case_ids(scenarios)
    if issues:
        raise ScenarioError(issues)
    return scenarios


def _files(paths: Iterable[StrPath]) -> tuple[list[Path], list[SchemaIssue]]:
    files: list[Path] = []
    issues: list[SchemaIssue] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
            )
            if not found:
                issues.append(
                    SchemaIssue(str(path), 0, "", "no .yaml or .yml files in this directory")
                )
            files += found
        elif path.exists():
            files.append(path)
        else:
            issues.append(SchemaIssue(str(path), 0, "", "no such file or directory"))
    unique = {file.resolve(): file for file in reversed(files)}  # first mention wins
    return [file for file in files if unique[file.resolve()] is file], issues


def _load(path: Path, faults: FaultRegistry) -> tuple[list[Scenario], list[SchemaIssue]]:
    file = str(path)
    try:
        data = path.read_bytes()
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return [], [SchemaIssue(file, line, "", f"not UTF-8 text (bad byte at offset {err.start})")]
    except OSError as err:
        return [], [SchemaIssue(file, 0, "", err.strerror or str(err))]
    return _read(text, file, faults)


def _read(text: str, file: str, faults: FaultRegistry) -> tuple[list[Scenario], list[SchemaIssue]]:
    issues = Issues(file)
    root = parse(text, issues)
    validator = Validator(issues, rules_for(faults))
    names: dict[str, int] = {}
    scenarios = []
    for node in _scenario_nodes(root, issues) if root is not None else []:
        pairs = mapping_pairs(node, (), issues)
        _check_name(pairs, names, issues)
        scenario = _scenario(node, pairs, validator)
        if scenario is not None:
            scenarios.append(scenario)
    # Aliases and merges can make one node report twice; then read the file top to bottom.
    unique = list(dict.fromkeys(issues.items))
    return scenarios, sorted(unique, key=lambda issue: issue.line)


def _scenario_nodes(root: Node, issues: Issues) -> list[MappingNode]:
    if (problem := tag_problem(root)) is not None:
        issues.add(line_of(root), (), problem)
        return []
    if isinstance(root, MappingNode):
        return [root]
    if not isinstance(root, SequenceNode):
        issues.add(
            line_of(root),
            (),
            f"expected a scenario (a mapping) or a list of them (got {describe(root)})",
        )
        return []
    if not root.value:
        issues.add(line_of(root), (), "an empty list: no scenarios")
    nodes = []
    for i, item in enumerate(root.value):
        if not isinstance(item, MappingNode):
            issues.add(
                line_of(item), (i,), f"expected a scenario (a mapping) (got {describe(item)})"
            )
        elif (problem := tag_problem(item)) is not None:
            issues.add(line_of(item), (i,), problem)
        else:
            nodes.append(item)
    return nodes


def _check_name(pairs: Pairs, seen: dict[str, int], issues: Issues) -> None:
    node = pairs["name"][1] if "name" in pairs else None
    if not isinstance(node, ScalarNode) or not node.tag.endswith(":str"):
        return  # a missing or mistyped name is the validator's to report
    if node.value in seen:
        issues.add(
            line_of(node),
            ("name",),
            f"duplicate name {node.value!r} (first at line {seen[node.value]})",
        )
    else:
        seen[node.value] = line_of(node)


def _scenario(node: MappingNode, pairs: Pairs, validator: Validator) -> Scenario | None:
    line = line_of(node)
    scenario = validator.build(Scenario, pairs, (), line)
    valid = scenario is not INVALID
    axes: tuple[SweepAxis, ...] = ()
    if "sweep" in pairs:
        before = len(validator.issues.items)
        key_node, sweep_node = pairs["sweep"]
        axes = read_sweep(sweep_node, scenario if valid else None, validator, line_of(key_node))
        valid = valid and len(validator.issues.items) == before
    if not valid:
        return None
    origin = Origin(validator.issues.file, line)
    built: Scenario = dataclasses.replace(scenario, sweep=axes, origin=origin)
    return built


def _colliding_case_ids(scenarios: list[Scenario]) -> list[SchemaIssue]:
    """Case ids are ``<file stem>::<name>``: two files with the same stem must not share names."""
    first: dict[tuple[str, str], Origin] = {}
    issues = []
    for scenario in scenarios:
        assert scenario.origin is not None
        key = (PurePath(scenario.origin.file).stem, scenario.name)
        if key in first:
            other = first[key]
            message = (
                f"same file name and scenario name as {other.file}:{other.line}, "
                "so their case ids would collide"
            )
            issues.append(SchemaIssue(scenario.origin.file, scenario.origin.line, "name", message))
        else:
            first[key] = scenario.origin
    return issues


def load_faults_file(path: StrPath, *, faults: FaultRegistry | None = None) -> tuple[Fault, ...]:
    """The faults of a ``tearline proxy --faults`` file: a mapping with one key, ``faults``,
    holding a list written exactly like a scenario's ``faults``. Raises ScenarioError."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ScenarioError([SchemaIssue(file, 0, "", str(err))]) from None
    issues = Issues(file)
    root = parse(text, issues)
    validator = Validator(issues, rules_for(faults if faults is not None else default_registry()))
    result: tuple[Fault, ...] = ()
    if root is not None and not isinstance(root, MappingNode):
        issues.add(
            line_of(root), (), f"expected a mapping with key 'faults' (got {describe(root)})"
        )
    elif root is not None:
        pairs = mapping_pairs(root, (), issues)
        for key in pairs:
            if key != "faults":
                issues.add(line_of(pairs[key][0]), (key,), "unknown key (expected only 'faults')")
        if "faults" not in pairs:
            issues.add(line_of(root), ("faults",), "missing key")
        else:
            node = pairs["faults"][1]
            value = validator.value(node, tuple[Fault, ...], ("faults",), line_of(node))
            if value is not INVALID:
                result = value
    if issues.items:
        raise ScenarioError(sorted(dict.fromkeys(issues.items), key=lambda i: i.line))
    return result
