"""Loading scenario files: safe YAML, the format version, deprecated forms, complete validation.

A file holds one scenario (a mapping) or a list of them. Everything wrong in a file is collected
before anything is raised, each issue with its file, line and key path. A file is read in its
format version (``harness.scenario.versions``): a deprecated form in it is read as its current
form, with a warning naming the line and the new form. ``read_text`` and ``read_file`` return a
``FileLoad`` (scenarios, issues, warnings); ``load_text`` and ``load_file`` return the scenarios,
raise ScenarioError when there is any issue, and emit each warning as a
``ScenarioFormatWarning``. Many files at once: ``harness.scenario.files``.

The fault registry (``kind`` -> fault config class) and the format rules are parameters so
tests can bring their own; by default they are ``harness.faults.FAULTS``, imported only when
needed, and ``harness.scenario.formats.FORMAT_RULES``.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import Issues, ScenarioError, SchemaIssue
from harness.config.nodes import Pairs, describe, line_of, mapping_pairs, parse, tag_problem
from harness.config.validate import INVALID, Validator, line_inside
from harness.faults.config import Fault
from harness.faults.registry import FaultRegistry, rules_for
from harness.record.format import read_recording, recording_problem
from harness.scenario.formats import FORMAT_RULES
from harness.scenario.model import (
    FaultList,
    Method,
    Origin,
    RequestConfig,
    Scenario,
    SweepAxis,
    TokensConfig,
)
from harness.scenario.settings import SettingsFinder
from harness.scenario.sources import MAX_FILE_BYTES, source
from harness.scenario.sweep import read_sweep
from harness.scenario.versions import (
    FORMAT_KEY,
    FormatRules,
    apply_to_nodes,
    edits_of,
    file_format,
    find_deprecated,
)
from harness.scenario.views import Lookup, ScenarioView
from reference_impl.defaults import REQUEST_PATH
from reference_impl.framing.request import Request
from reference_impl.payload.tokens import PROFILES

__all__ = [
    "MAX_FILE_BYTES",
    "FaultRegistry",
    "FileLoad",
    "ScenarioFormatWarning",
    "default_registry",
    "load_faults_file",
    "load_file",
    "load_text",
    "read_file",
    "read_text",
    "rules_for",
]

StrPath = str | os.PathLike[str]


class ScenarioFormatWarning(FutureWarning):
    """A deprecated form in a scenario file: it is read as its new form, and will stop being
    read in a later release (``tearline upgrade`` rewrites the file)."""


def default_registry() -> FaultRegistry:
    """``harness.faults.FAULTS``, every fault module imported on first use."""
    from harness.faults import FAULTS  # noqa: PLC0415 - lazy: tests inject their own registry

    return FAULTS


@dataclass(frozen=True, slots=True)
class FileLoad:
    """One file, read: its scenarios, or the issues that keep it from being run, and the
    warnings about deprecated forms it uses (read as their new forms)."""

    file: str
    #: every scenario of the file, none when it has an issue (a file runs whole or not at all)
    scenarios: tuple[Scenario, ...] = ()
    issues: tuple[SchemaIssue, ...] = ()
    warnings: tuple[SchemaIssue, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.issues

    def strictly(self) -> FileLoad:
        """The load with every warning an issue (``validate --strict``)."""
        if not self.warnings:
            return self
        issues = sorted((*self.issues, *(w.as_error() for w in self.warnings)), key=_line)
        return FileLoad(self.file, (), tuple(issues), ())

    def failed(self, *issues: SchemaIssue) -> FileLoad:
        """The load with more issues (found across files): its scenarios are dropped."""
        return FileLoad(self.file, (), (*self.issues, *issues), self.warnings)


def _line(issue: SchemaIssue) -> int:
    return issue.line


def read_text(
    text: str | bytes,
    file: str = "<string>",
    *,
    faults: FaultRegistry | None = None,
    formats: FormatRules | None = None,
    default_format: int | None = None,
) -> FileLoad:
    """The scenarios of YAML ``text`` (``file`` names it in issues), read in the format it
    names, else ``default_format`` (its folder's), else the current one."""
    rules = formats if formats is not None else FORMAT_RULES
    registry = faults if faults is not None else default_registry()
    return _read(text, file, registry, rules, default_format)


def read_file(
    path: StrPath,
    *,
    faults: FaultRegistry | None = None,
    formats: FormatRules | None = None,
    settings: SettingsFinder | None = None,
) -> FileLoad:
    """One scenario file, with its folder's settings (``tearline.yaml``)."""
    rules = formats if formats is not None else FORMAT_RULES
    finder = settings if settings is not None else SettingsFinder(rules)
    found, problems = finder.of_file(Path(path))
    if problems:
        where = problems[0].file
        why = f"not read: the settings file {where} that governs it is wrong (see there)"
        return FileLoad(str(path), (), (SchemaIssue(str(path), 0, "", why),))
    data, problems = source(Path(path))
    if data is None:
        return FileLoad(str(path), (), tuple(problems))
    default = found.format if found is not None else None
    return read_text(data, str(path), faults=faults, formats=rules, default_format=default)


def load_text(
    text: str, file: str = "<string>", *, faults: FaultRegistry | None = None
) -> list[Scenario]:
    """The scenarios of YAML ``text``; ``file`` names it in issues. Raises ScenarioError."""
    return loaded(read_text(text, file, faults=faults))


def load_file(path: StrPath, *, faults: FaultRegistry | None = None) -> list[Scenario]:
    """The scenarios of one file. Raises ScenarioError listing every mistake in it."""
    return loaded(read_file(path, faults=faults))


def loaded(*loads: FileLoad) -> list[Scenario]:
    """The scenarios of these loads; ScenarioError with every issue when there is one. Each
    warning is emitted as a ``ScenarioFormatWarning``."""
    for load in loads:
        for warning in load.warnings:
            warnings.warn(ScenarioFormatWarning(str(warning)), stacklevel=3)
    issues = [issue for load in loads for issue in load.issues]
    if issues:
        raise ScenarioError(issues)
    return [scenario for load in loads for scenario in load.scenarios]


def _read(
    text: str | bytes,
    file: str,
    faults: FaultRegistry,
    rules: FormatRules,
    default_format: int | None,
) -> FileLoad:
    issues = Issues(file)
    root = parse(text, issues)
    nodes = _scenario_nodes(root, issues) if root is not None else []
    notes = Issues(file, warning=True)
    lookup = Lookup()
    says = any(FORMAT_KEY in lookup.pairs(node) for node in nodes)
    version = _read_deprecated(nodes, rules, default_format, issues, notes, lookup)
    if version is None:
        return FileLoad(file, (), tuple(issues.listed()))
    named = version if says else default_format
    validator = Validator(issues, rules_for(faults))
    names: dict[str, int] = {}
    scenarios = []
    for node in nodes:
        pairs = mapping_pairs(node, (), issues)
        pairs.pop(FORMAT_KEY, None)  # read above
        _check_name(pairs, names, issues)
        scenario = _scenario(node, pairs, validator, named)
        if scenario is not None:
            scenarios.append(scenario)
    listed = tuple(issues.listed())
    return FileLoad(file, () if listed else tuple(scenarios), listed, tuple(notes.listed()))


def _read_deprecated(
    nodes: Sequence[MappingNode],
    rules: FormatRules,
    default_format: int | None,
    issues: Issues,
    notes: Issues,
    lookup: Lookup | None = None,
) -> int | None:
    """The file's format version, with its deprecated forms made their current forms in
    ``nodes`` (each a warning in ``notes``); None when the version is wrong."""
    default = rules.current if default_format is None else default_format
    lookup = lookup or Lookup()
    version = file_format(nodes, default, rules, issues, lookup)
    views = [ScenarioView(node, lookup) for node in nodes]
    found = find_deprecated(views, rules.applying(version)) if version is not None else []
    if not apply_to_nodes(edits_of(found)) and found:
        issues.add(found[0].finding.line, found[0].finding.path, "deprecated forms overlap here")
    for item in found:
        notes.add(item.finding.line, item.finding.path, item.message)
    return version


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


def _scenario(
    node: MappingNode, pairs: Pairs, validator: Validator, version: int | None
) -> Scenario | None:
    line = line_of(node)
    scenario = validator.build(Scenario, pairs, (), line)
    valid = scenario is not INVALID
    axes: tuple[SweepAxis, ...] = ()
    if "sweep" in pairs:
        before = len(validator.issues.items)
        key_node, sweep_node = pairs["sweep"]
        axes = read_sweep(sweep_node, scenario if valid else None, validator, line_of(key_node))
        valid = valid and len(validator.issues.items) == before
    if not valid or not _replayable(scenario, pairs, validator.issues, line):
        return None
    origin = Origin(validator.issues.file, line)
    built: Scenario = dataclasses.replace(scenario, sweep=axes, origin=origin, format=version)
    return _as_recorded(built)


def _replayable(scenario: Scenario, pairs: Pairs, issues: Issues, line: int) -> bool:
    """A link that replays a recording names a file this tearline can replay, of the link's
    framing: read here, at the loader's edge, since the scenario model does no I/O."""
    link = scenario.link
    if link.producer.replay is None:
        return True
    problem = recording_problem(link.producer.replay, link.framing)
    if problem is not None:
        keys: list[str | int] = ["link", "producer", "replay"]
        issues.add(line_inside(pairs, keys, line), tuple(keys), problem)
    return problem is None


def _as_recorded(scenario: Scenario) -> Scenario:
    """A replayed link takes from the recording what the scenario leaves unsaid: the request
    the consumer made, and the token profile the stream was read as (a recording of version
    1 kept neither)."""
    link = scenario.link
    if link.producer.replay is None:
        return scenario
    meta = read_recording(link.producer.replay).meta  # readable: ``_replayable`` said so
    if link.request == RequestConfig() and meta.request is not None:
        link = dataclasses.replace(link, request=recorded_request(meta.request, link.framing))
    if link.payload == "tokens" and link.tokens is None and meta.profile is not None:
        profile = meta.profile if meta.profile in PROFILES else None
        if profile is not None:
            link = dataclasses.replace(link, tokens=TokensConfig(profile=profile))  # type: ignore[arg-type]
    return dataclasses.replace(scenario, link=link)


def recorded_request(request: Request, framing: str) -> RequestConfig:
    """A recording's request as a scenario's ``link.request``: on a framed TCP stream only its
    body means anything; a plain ``GET`` of the default path is the default (a body that is
    no UTF-8 text cannot be written there: the request is then kept without it)."""
    try:
        body = request.body.decode() if request.body else None
    except UnicodeDecodeError:
        body = None
    if framing in ("length-prefixed", "ndjson"):
        return RequestConfig(body=body)
    headers = tuple(f"{name}: {value}" for name, value in request.headers)
    method = request.method if request.method in get_args(Method) else None
    plain = method in (None, "GET") and request.path == REQUEST_PATH and not headers
    if plain and body is None:
        return RequestConfig()
    return RequestConfig(method, request.path, headers, body)  # type: ignore[arg-type]


def load_faults_file(path: StrPath, *, faults: FaultRegistry | None = None) -> tuple[Fault, ...]:
    """The faults of a ``tearline proxy --faults`` file: a mapping with the key ``faults``,
    holding a list written exactly like a scenario's ``faults``, except that ``connection``
    defaults to 0 (every connection), and optionally ``format``. Deprecated forms are read as
    their new forms (a ``ScenarioFormatWarning`` each). Raises ScenarioError."""
    file = str(path)
    finder = SettingsFinder(FORMAT_RULES)
    found, problems = finder.of_file(Path(path))
    data, unread = source(Path(path))
    if problems or data is None:
        raise ScenarioError(problems or unread)
    issues = Issues(file)
    notes = Issues(file, warning=True)
    root = parse(data, issues)
    validator = Validator(issues, rules_for(faults if faults is not None else default_registry()))
    result: tuple[Fault, ...] = ()
    if root is not None and not isinstance(root, MappingNode):
        issues.add(
            line_of(root), (), f"expected a mapping with key 'faults' (got {describe(root)})"
        )
    elif root is not None:
        default = found.format if found is not None else None
        if _read_deprecated([root], FORMAT_RULES, default, issues, notes) is not None:
            result = _faults_of(root, validator)
    loaded(FileLoad(file, (), tuple(issues.listed()), tuple(notes.listed())))  # raises, warns
    return result


def _faults_of(root: MappingNode, validator: Validator) -> tuple[Fault, ...]:
    issues = validator.issues
    pairs = mapping_pairs(root, (), issues)
    for key in pairs:
        if key not in ("faults", FORMAT_KEY):
            message = "unknown key (expected only 'faults' and 'format')"
            issues.add(line_of(pairs[key][0]), (key,), message)
    if "faults" not in pairs:
        issues.add(line_of(root), ("faults",), "missing key")
        return ()
    node = pairs["faults"][1]
    value = validator.value(node, FaultList, ("faults",), line_of(node))
    if value is INVALID:
        return ()
    assert isinstance(node, SequenceNode)  # the faults validated as a list
    named = [i for i, fault in enumerate(value) if fault.request is not None]
    for index in named:  # (a proxy has no session whose exchanges a request could name)
        message = "only in a scenario with payload mcp, not in a faults file"
        issues.add(line_of(node.value[index]), ("faults", index, "request"), message)
    return () if named else _every_connection(value, node)


def _every_connection(faults: tuple[Fault, ...], node: Node) -> tuple[Fault, ...]:
    """A standalone proxy sees many clients, none of them first: a fault of a faults file
    that names no ``connection`` applies to every connection (0), where a scenario's applies
    to the case's first (1). The key is looked for as the validator saw it (merges included)."""
    assert isinstance(node, SequenceNode)  # the faults validated as a list
    scratch = Issues("")  # the validator reported every problem of these nodes already
    return tuple(
        fault
        if isinstance(item, MappingNode) and "connection" in mapping_pairs(item, (), scratch)
        else _on_every_connection(fault)
        for fault, item in zip(faults, node.value, strict=True)
    )


def _on_every_connection(fault: Fault) -> Fault:
    moved: Fault = dataclasses.replace(fault, connection=0)  # type: ignore[type-var]  # a dataclass
    return moved
