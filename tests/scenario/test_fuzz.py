"""Fuzzing the scenario loader: whatever the input, loading (and expanding what loaded) either
succeeds or raises ScenarioError whose every issue names the file, points at a line of it (or
at line 0 with the reason, for a file without lines), and is one short line. Nothing else is
ever raised.

Four sources of input: YAML-ish text built from the tokens that matter (indicators, anchors,
tags, our keys and values, odd numbers); structured mutations of the library's own scenario
files (keys deleted, duplicated, retyped; values replaced by huge, negative, NaN, long or
deeply nested ones; fault kinds swapped); line-level mutations of the same files; and raw
bytes written to a file. Examples that once failed are pinned with ``@example``. The budget
is a few hundred examples each under the CI profile (``tests/conftest.py``); the ``fuzz``
profile runs twenty times more.
"""

from __future__ import annotations

import copy
import math
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.config import limits
from harness.config.nodes import MAX_DEPTH
from harness.faults import FAULTS
from harness.scenario import ScenarioError, expand, load_file, load_text
from tests.scenario.toys import MINIMAL, FixedShape, malformed
from tests.wire import examples

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = sorted((ROOT / "scenarios").rglob("*.yaml"))
TEXTS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in LIBRARY}
DATA = {name: yaml.safe_load(text) for name, text in TEXTS.items()}
FILE = "fuzz.yaml"
# Fuzzed inputs are slow to build at times (a deep nest, a long string), and larger than
# Hypothesis likes: neither is a problem of the test.
QUIET = (HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example)


def check(text: str, file: str = FILE) -> None:
    """Load ``text`` and expand what loads; every issue well formed, nothing else raised."""
    lines = text.count("\n") + 1
    try:
        scenarios = load_text(text, file)
    except ScenarioError as err:
        assert malformed(err.issues, file, lines) == []
        return
    for scenario in scenarios:
        try:
            expand(scenario, lambda _: FixedShape(64, 8))
        except ScenarioError as err:
            assert malformed(err.issues, file, lines) == []


# ---- 1. YAML-ish text

_INDICATORS = [": ", "- ", "\n", "\n  ", "  ", "[", "]", "{", "}", ", ", "? ", "|", ">", "#"]
_NODES = ["&a ", "*a", "&b ", "*b", "<<: ", "<<: *a", "!!python/object ", "!x ", "!!binary "]
_QUOTES = ["'", '"', '"\\e"', '"\\ud800"', '"\\x00"', "\\", "'\n'"]
_DOCS = ["---\n", "...\n", "%YAML 1.1\n", "%TAG ! x\n"]
_ODD = ["\t", "\x00", "\x1b", "\x85", "\u2028", "\ufeff", "é", "\U0001f600", "@", "`", "%"]
_NUMBERS = ["1e9", "-1", "0", "0x_", "0b_", "0o7", "0777", "1:30", ".nan", "-.inf", "1e400"]
_NUMBERS += ["1.0e+400", "99999999999999999999999", "9" * 5000, "18446744073709551616", "1_0"]
_KEYS = ["name", "description", "link", "framing", "payload", "messages", "count", "texts"]
_KEYS += ["size_bytes", "envelope", "records", "tokens", "expect", "verdict", "any_of", "faults"]
_KEYS += ["kind", "at", "offset", "frame", "sweep", "from", "to", "step", "seed", "deadline_ms"]
_KEYS += ["faults[0].at.offset", "link.framing", "consumer", "read_bytes", "delay_ms"]
_VALUES = ["sse", "ndjson", "grpc", "websocket", "length-prefixed", "messages", "envelope"]
_VALUES += ["tokens", "MESSAGE_COMPLETE", "end", "null", "true", "~", "x" * 500, *sorted(FAULTS)]
_TOKENS = _INDICATORS + _NODES + _QUOTES + _DOCS + _ODD + _NUMBERS + _KEYS + _VALUES

yamlish = st.lists(st.one_of(st.sampled_from(_TOKENS), st.text(max_size=4)), max_size=80).map(
    "".join
)


@given(text=yamlish, prefix=st.booleans())
@settings(examples(300), suppress_health_check=QUIET)
@example(text="seed: 0x_\n", prefix=True)  # int('', 16): ValueError
@example(text="seed: " + "9" * 5000 + "\n", prefix=True)  # str(int) over 4300 digits
@example(text="sweep: {seed: {from: 0, to: 18446744073709551615}}\n", prefix=True)  # len(range)
@example(text="a: " + "[" * 5000, prefix=False)  # RecursionError, line 0
@example(text="a: &x [1, *x]\n", prefix=False)  # a list that contains itself
@example(text="", prefix=False)  # empty: line 0 with its reason
@example(text='source: "\\ud800"\n', prefix=True)  # a lone surrogate, refused by libyaml
@example(text="!!python/object : \x850", prefix=False)  # NEL ends a line for YAML, not grep
def test_yamlish_text(text: str, prefix: bool) -> None:
    check((MINIMAL if prefix else "") + text)


# ---- 2. structured mutations of the library's own files

_BIG = [limits.MAX_SEED + 1, 2**63, 10**30, -(2**63), 10**400]
_AT_BOUNDS: list[float] = [
    limits.MAX_COUNT + 1,
    limits.MAX_MESSAGES + 1,
    limits.MAX_MESSAGE_BYTES + 1,
    limits.MAX_PAYLOAD_BYTES + 1,
]
_AT_BOUNDS += [limits.MAX_BYTES + 1, limits.MAX_DURATION_MS + 1, limits.MAX_RECONNECTS + 1]
_SCALARS: list[Any] = [None, True, False, -1, 0, 1, 0.5, -0.0, "", "end", "x" * 10_000]
_SCALARS += [math.nan, math.inf, -math.inf, 1e300, *_BIG, *_AT_BOUNDS]
_SHAPES: list[Any] = [{}, [], {"from": 0, "to": 10**30}, {"from": 5, "to": 1}, [[]], [{}]]

replacement = st.one_of(
    st.sampled_from(_SCALARS + _SHAPES),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(_VALUES + _KEYS),
)


def _slots(data: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of ``data``, depth first: the places a mutation acts."""
    found: list[tuple[Any, Any]] = []
    pending = [data]
    while pending:
        node = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            found.append((node, key))
            if isinstance(value, dict | list):
                pending.append(value)
    return found


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def mutated_library_file(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(DATA)))
    data = copy.deepcopy(DATA[name])
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(data)
        if not slots:
            break
        parent, key = draw(st.sampled_from(slots))
        operation = draw(st.sampled_from(("delete", "retype", "copy", "kind", "unknown", "nest")))
        if operation == "delete":
            del parent[key]
        elif operation == "retype":  # a copy: a later mutation must not change _SHAPES
            parent[key] = copy.deepcopy(draw(replacement))
        elif operation == "copy" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif operation == "kind" and isinstance(parent, dict) and "kind" in parent:
            parent["kind"] = draw(st.sampled_from(sorted(FAULTS)))
        elif operation == "unknown" and isinstance(parent, dict):
            parent[draw(st.sampled_from(_KEYS))] = copy.deepcopy(draw(replacement))
        elif operation == "nest":
            parent[key] = _nest(parent[key], draw(st.integers(1, MAX_DEPTH + 8)))
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1 << 20)


@given(text=mutated_library_file())
@settings(examples(300), suppress_health_check=QUIET)
# the fuzz profile's find: 15 characters shown as 52 (repr's escapes), past the length bound
@example(text=MINIMAL + 'faults: [{kind: "0000000000\\x1F\\b\\U0001005E\\U00018D09\\U0001F0C0"}]\n')
@example(text=MINIMAL + 'faults: [{kind: "' + "\\U0001F0C0" * 40 + '"}]\n')
def test_mutated_library_files(text: str) -> None:
    check(text)


# ---- 3. line-level mutations of the same files: duplicate keys, cut files, stray characters


@st.composite
def edited_library_file(draw: st.DrawFn) -> str:
    lines = TEXTS[draw(st.sampled_from(sorted(TEXTS)))].splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        operation = draw(st.sampled_from(("delete", "duplicate", "insert", "truncate")))
        if operation == "delete" and lines:
            del lines[at]
        elif operation == "duplicate" and lines:
            lines.insert(at, lines[at])
        elif operation == "insert":
            lines.insert(at, draw(st.sampled_from(_TOKENS)) + draw(st.sampled_from(_TOKENS)))
        elif operation == "truncate" and lines:
            line = lines[at]
            lines[at] = line[: draw(st.integers(0, len(line)))]
    return "".join(lines)


@given(text=edited_library_file())
@settings(examples(200), suppress_health_check=QUIET)
def test_edited_library_files(text: str) -> None:
    check(text)


# ---- 4. raw bytes in a file


@given(data=st.binary(max_size=200), prefix=st.booleans())
@settings(examples(100), suppress_health_check=QUIET)
@example(data=b"\xff\xfe", prefix=False)  # UTF-16 BOM: not UTF-8
@example(data=b"", prefix=False)
def test_bytes_in_a_file(data: bytes, prefix: bool) -> None:
    raw = (MINIMAL.encode() if prefix else b"") + data
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "x.yaml")
        path.write_bytes(raw)
        try:
            load_file(path)
        except ScenarioError as err:
            assert malformed(err.issues, str(path), raw.count(b"\n") + 1) == []


def test_every_library_file_loads_unchanged() -> None:
    """The mutations start from valid files (else the fuzz tests would mostly test one)."""
    for name, text in TEXTS.items():
        assert load_text(text, name)
