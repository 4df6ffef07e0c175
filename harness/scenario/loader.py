"""Loading scenario files: safe YAML, complete validation, one ScenarioError with every issue.

A file holds one scenario (a mapping) or a list of them. Everything wrong in a file (or in all
the files of ``load_paths``) is collected before anything is raised, each issue with its file,
line and key path. The fault registry (``kind`` -> fault config class) is a parameter so tests can
bring their own; by default it is ``harness.faults.FAULTS`` (``harness/faults/registry.py``),
imported only when needed.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import get_args

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import Issues, ScenarioError, SchemaIssue, clip_repr
from harness.config.nodes import Pairs, describe, line_of, mapping_pairs, parse, tag_problem
from harness.config.validate import INVALID, Validator, line_inside
from harness.faults.config import Fault
from harness.faults.registry import FaultRegistry, rules_for
from harness.record.format import read_recording, recording_problem
from harness.scenario.model import (
    FaultList,
    Method,
    Origin,
    RequestConfig,
    Scenario,
    SweepAxis,
    TokensConfig,
)
from harness.scenario.sweep import read_sweep
from reference_impl.defaults import REQUEST_PATH
from reference_impl.framing.request import Request
from reference_impl.payload.tokens import PROFILES

StrPath = str | os.PathLike[str]


def default_registry() -> FaultRegistry:
    """``harness.faults.FAULTS``, every fault module imported on first use."""
    from harness.faults import FAULTS  # noqa: PLC0415 - lazy: tests inject their own registry

    return FAULTS


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
        mode, problem = mode_of(path)
        if problem is not None:
            issues.append(SchemaIssue(str(path), 0, "", problem))
        elif stat.S_ISDIR(mode):
            found, unreadable = scenario_files(path)
            issues += [SchemaIssue(str(p), 0, "", why) for p, why in unreadable]
            if not found and not unreadable:
                issues.append(
                    SchemaIssue(str(path), 0, "", "no .yaml or .yml files in this directory")
                )
            files += found
        else:
            files.append(path)
    unique = {os.path.realpath(file): file for file in reversed(files)}  # first mention wins
    return [file for file in files if unique[os.path.realpath(file)] is file], issues


def _load(path: Path, faults: FaultRegistry) -> tuple[list[Scenario], list[SchemaIssue]]:
    data, issues = _source(path)
    return _read(data, str(path), faults) if data is not None else ([], issues)


def _source(path: Path) -> tuple[bytes | None, list[SchemaIssue]]:
    """The bytes of a scenario file, checked to be UTF-8 text; or the issue saying why not."""
    file = str(path)
    data, problem = read_bounded(path)
    if data is None:
        return None, [SchemaIssue(file, 0, "", problem or "cannot read")]
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return None, [
            SchemaIssue(file, line, "", f"not UTF-8 text (bad byte at offset {err.start})")
        ]
    return data, []


#: Largest scenario file read, refused with its size before it is opened (the library's largest
#: is 4 KB; a megabyte of YAML takes a few seconds to check).
MAX_FILE_BYTES = 1 << 20
_SUFFIXES = (".yaml", ".yml")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def mode_of(path: Path) -> tuple[int, str | None]:
    """``st_mode`` of ``path`` (links followed), or why there is none: missing, a dangling
    link, a link loop, a folder we may not enter."""
    try:
        return os.stat(path).st_mode, None
    except FileNotFoundError:
        if os.path.islink(path):
            return 0, f"a dangling symbolic link (to {clip_repr(os.readlink(path), 80)})"
        return 0, "no such file or directory"
    except OSError as err:
        return 0, f"cannot read: {err.strerror or err}"


def _special(mode: int) -> str | None:
    """Why a file of this mode is not read (only regular files are: a FIFO or a device would
    block or never end)."""
    if stat.S_ISREG(mode):
        return None
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    return f"{kind}, not a scenario file: not read"


def _too_big(size: int) -> str | None:
    if size <= MAX_FILE_BYTES:
        return None
    return f"{size} bytes: too big for a scenario file (at most {MAX_FILE_BYTES}); not read"


def read_bounded(path: Path) -> tuple[bytes | None, str | None]:
    """The bytes of a regular file of at most ``MAX_FILE_BYTES``, or why not. The file is
    stat'ed before it is opened, opened without blocking (a FIFO swapped in after the stat
    cannot hang us), checked again once open, and read no further than the limit."""
    mode, problem = mode_of(path)
    problem = problem or _special(mode)
    if problem is not None:
        return None, problem
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        return None, f"cannot read: {err.strerror or err}"
    try:
        info = os.fstat(fd)
        problem = _special(info.st_mode) or _too_big(info.st_size)
        data = b"" if problem is not None else _read_fd(fd, MAX_FILE_BYTES + 1)
    except OSError as err:
        return None, f"cannot read: {err.strerror or err}"
    finally:
        os.close(fd)
    if problem is not None:
        return None, problem
    if len(data) > MAX_FILE_BYTES:  # it grew since the stat
        return None, f"over {MAX_FILE_BYTES} bytes: too big for a scenario file; not read"
    if not data:
        return None, "empty file (0 bytes): expected a scenario or a list of scenarios"
    return data, None


def _read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(1 << 16, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def scenario_files(root: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The ``*.yaml`` and ``*.yml`` entries under ``root``, sorted, whatever they are (a FIFO
    or a dangling link named like a scenario is reported when read, not skipped), and the
    folders that could not be listed. Links to folders are followed, each folder once."""
    found: list[Path] = []
    unreadable: list[tuple[Path, str]] = []
    seen: set[tuple[int, int]] = set()

    def refused(err: OSError) -> None:
        unreadable.append((Path(err.filename), f"cannot list: {err.strerror or err}"))

    for folder, subfolders, names in os.walk(root, onerror=refused, followlinks=True):
        try:
            info = os.stat(folder)
        except OSError:
            subfolders.clear()
            continue
        if (info.st_dev, info.st_ino) in seen:  # a link back up the tree: walked already
            subfolders.clear()
            continue
        seen.add((info.st_dev, info.st_ino))
        found += [Path(folder, name) for name in names if name.endswith(_SUFFIXES)]
    return sorted(found), unreadable


def _read(
    source: str | bytes, file: str, faults: FaultRegistry
) -> tuple[list[Scenario], list[SchemaIssue]]:
    issues = Issues(file)
    root = parse(source, issues)
    validator = Validator(issues, rules_for(faults))
    names: dict[str, int] = {}
    scenarios = []
    for node in _scenario_nodes(root, issues) if root is not None else []:
        pairs = mapping_pairs(node, (), issues)
        _check_name(pairs, names, issues)
        scenario = _scenario(node, pairs, validator)
        if scenario is not None:
            scenarios.append(scenario)
    return scenarios, issues.listed()


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
    if not valid or not _replayable(scenario, pairs, validator.issues, line):
        return None
    origin = Origin(validator.issues.file, line)
    built: Scenario = dataclasses.replace(scenario, sweep=axes, origin=origin)
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
    holding a list written exactly like a scenario's ``faults``, except that ``connection``
    defaults to 0 (every connection). Raises ScenarioError."""
    file = str(path)
    data, problems = _source(Path(path))
    if data is None:
        raise ScenarioError(problems)
    issues = Issues(file)
    root = parse(data, issues)
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
            value = validator.value(node, FaultList, ("faults",), line_of(node))
            if value is not INVALID:
                result = _every_connection(value, node)
    if issues.items:
        raise ScenarioError(issues.listed())
    return result


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
