"""The house's layers, read from the source: the package import graph (function-level imports
included) has no loop, no import runs back up the layer table of ``docs/architecture.md``, and
no pure package imports a shell one.

The table is read from the document itself, so the rules checked here and the rules a reader is
told are the same text. A package is a folder of ``harness/`` or ``reference_impl/`` (its
subfolders are packages of their own); a module belongs to the folder it lies in.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
TOPS = ("harness", "reference_impl")
#: a row of the layer table: | 3 | `harness/faults/` | yes | ... |
Graph = dict[str, dict[str, list[str]]]
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*(yes|no)\s*\|")


@dataclass(frozen=True, slots=True)
class Layer:
    rank: int
    packages: tuple[str, ...]
    pure: bool


def layer_table(text: str) -> list[Layer]:
    """The rows of the document's layer table, in order."""
    layers = []
    for line in text.splitlines():
        if match := ROW.match(line):
            names = re.findall(r"`([^`]+)/`", match.group(2))
            packages = tuple(name.replace("/", ".") for name in names)
            layers.append(Layer(int(match.group(1)), packages, match.group(3) == "yes"))
    return layers


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {_module_name(p): p for top in TOPS for p in (ROOT / top).rglob("*.py")}


def package_of(path: Path) -> str:
    return ".".join(path.parent.relative_to(ROOT).parts)


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports anywhere in it (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            module = name
            while module and module not in known:  # a name imported from a module: the module
                module = module.rpartition(".")[0]
            if module:
                found.add(module)
    return found


def package_graph() -> Graph:
    """package -> imported package -> the imports ("module -> module") that make the arrow."""
    known = modules()
    graph: Graph = defaultdict(lambda: defaultdict(list))
    for name, path in known.items():
        for target in imported(path, known):
            source_package, target_package = package_of(path), package_of(known[target])
            graph[source_package]
            if target_package != source_package:
                graph[source_package][target_package].append(f"{name} -> {target}")
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """Each loop of packages found by a depth-first search (one per back edge)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(package: str) -> None:
        state[package] = 1
        path.append(package)
        for target in sorted(graph.get(package, {})):
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[package] = 2

    for package in sorted(graph):
        if package not in state:
            visit(package)
    return found


def rank_of(layers: list[Layer]) -> dict[str, Layer]:
    return {package: layer for layer in layers for package in layer.packages}


LAYERS = layer_table(DOC.read_text(encoding="utf-8"))


def test_the_table_is_read() -> None:
    assert [layer.rank for layer in LAYERS] == list(range(1, len(LAYERS) + 1))
    assert rank_of(LAYERS)["harness.faults"].pure
    assert not rank_of(LAYERS)["harness.proxy"].pure


def test_every_package_is_in_the_table_once() -> None:
    listed = [package for layer in LAYERS for package in layer.packages]
    assert sorted(listed) == sorted(set(listed))
    assert sorted(set(listed)) == sorted({package_of(p) for p in modules().values()})


def test_the_pure_layers_come_first() -> None:
    """Every pure layer sits above every shell layer, so 'no import runs back up' already keeps
    the shell out of the core; the next test says so by name too."""
    purity = [layer.pure for layer in LAYERS]
    assert purity == sorted(purity, reverse=True)


def test_no_package_loop() -> None:
    assert cycles(package_graph()) == []


def upward(graph: Graph, ranks: dict[str, Layer]) -> list[str]:
    """Every arrow that runs back up the table, with one import that makes it."""
    return [
        f"{source} (layer {ranks[source].rank}) imports {target} (layer {ranks[target].rank}): "
        f"{arrows[0]}"
        for source, targets in graph.items()
        for target, arrows in targets.items()
        if ranks[target].rank > ranks[source].rank
    ]


def into_the_shell(graph: Graph, ranks: dict[str, Layer]) -> list[str]:
    """Every arrow from a pure package to a shell one."""
    return [
        f"{source} imports {target}: {arrows[0]}"
        for source, targets in graph.items()
        for target, arrows in targets.items()
        if ranks[source].pure and not ranks[target].pure
    ]


def test_no_import_runs_back_up_the_table() -> None:
    assert upward(package_graph(), rank_of(LAYERS)) == []


def test_no_pure_package_imports_the_shell() -> None:
    assert into_the_shell(package_graph(), rank_of(LAYERS)) == []


def test_the_checks_can_fail() -> None:
    """The loop finder and the table reader see what they are meant to (else the tests above
    would pass on anything)."""
    looped = {"a": {"b": ["a.x -> b.y"]}, "b": {"c": ["b.y -> c.z"]}, "c": {"a": ["c.z -> a.x"]}}
    assert cycles(looped) == [["a", "b", "c", "a"]]
    table = "| 1 | `harness/config/`, `harness/` | yes | x |\n| 2 | `harness/proxy/` | no | y |"
    assert layer_table(table) == [
        Layer(1, ("harness.config", "harness"), True),
        Layer(2, ("harness.proxy",), False),
    ]
    ranks = rank_of(layer_table(table))
    back = {"harness.config": {"harness.proxy": ["harness.config.x -> harness.proxy.y"]}}
    assert upward(back, ranks) == [
        "harness.config (layer 1) imports harness.proxy (layer 2): "
        "harness.config.x -> harness.proxy.y"
    ]
    assert into_the_shell(back, ranks) == [
        "harness.config imports harness.proxy: harness.config.x -> harness.proxy.y"
    ]
    assert upward({"harness.proxy": {"harness.config": ["p -> c"]}}, ranks) == []
