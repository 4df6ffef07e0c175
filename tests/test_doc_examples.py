"""Every example in the README and the docs runs: a doc example that stops passing fails CI.

- ``yaml`` blocks that are scenarios (their first line that is not a comment starts with
  ``name:`` or ``- name:``, after a ``format:`` line if any) are run against the reference
  link, and every case must pass;
- ``yaml`` blocks that are faults files (``faults:``) load as ``tearline proxy --faults``;
- every ``tearline ...`` line in ``sh`` blocks parses with the real command-line parser.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli.main import build_parser
from harness.link.reference import prepared_link
from harness.running.execute import run_all
from harness.running.external import contract_values
from harness.scenario import Link, expand, load_text
from harness.scenario.loader import load_faults_file
from reference_impl.framing import FramingName
from reference_impl.payload import PayloadName

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "scenarios" / "README.md"]


@dataclass(frozen=True)
class Block:
    doc: Path
    index: int
    lang: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(ROOT)}#{self.index}"

    @property
    def head(self) -> str:
        """The first line that is not a comment (nor the file's ``format:``)."""
        lines = [line for line in self.text.splitlines() if not line.startswith("#")]
        if lines and lines[0].startswith("format:"):
            lines = lines[1:]
        return lines[0] if lines else ""


def blocks(lang: str) -> list[Block]:
    found = []
    for doc in DOCS:
        for index, (kind, text) in enumerate(
            re.findall(r"^ *```(\w+)\n(.*?)^ *```", doc.read_text(), re.DOTALL | re.MULTILINE)
        ):
            if kind == lang:
                found.append(Block(doc, index, kind, text))
    return found


SCENARIOS = [b for b in blocks("yaml") if b.head.startswith(("name:", "- name:"))]
FAULT_FILES = [b for b in blocks("yaml") if b.head.startswith("faults:")]
COMMANDS = [
    (b, line.strip())
    for b in blocks("sh")
    for line in b.text.replace("\\\n", " ").splitlines()
    if line.strip().startswith("tearline ")
]


#: the placeholders of the consumer contract, as the runner fills them for a sample link
PLACEHOLDERS = contract_values(Link(FramingName.SSE, PayloadName.TOKENS), "127.0.0.1", 4000)


def test_the_docs_have_examples_of_each_kind() -> None:
    assert len(SCENARIOS) >= 15
    assert FAULT_FILES
    assert len(COMMANDS) >= 8


@pytest.mark.parametrize("block", SCENARIOS, ids=lambda b: b.name)
def test_a_scenario_example_passes(block: Block) -> None:
    cases = [
        case
        for scenario in load_text(block.text, block.name)
        for case in expand(scenario, prepared_link)
    ]
    failed = [(r.case_id, r.outcome, r.diagnosis) for r in run_all(cases) if not r.passed]
    assert failed == []


@pytest.mark.parametrize("block", FAULT_FILES, ids=lambda b: b.name)
def test_a_faults_file_example_loads(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(block.text)
    assert load_faults_file(path)


@pytest.mark.parametrize(("block", "line"), COMMANDS, ids=lambda v: getattr(v, "name", ""))
def test_a_command_example_parses(block: Block, line: str) -> None:
    for placeholder, value in PLACEHOLDERS.items():  # a consumer command template
        line = line.replace("{" + placeholder + "}", value)
    words = [w for w in shlex.split(line, comments=True) if w != "..."]
    build_parser().parse_args(words[1:])  # SystemExit (exit 2) on an unknown flag


def test_the_contract_lists_exactly_the_placeholders_the_runner_fills() -> None:
    """docs/consumer-contract.md's table is the one list of what a program is given."""
    doc = (ROOT / "docs" / "consumer-contract.md").read_text()
    listed = set(re.findall(r"^\| `\{(\w+)\}`(?:, `\{(\w+)\}`)? \|", doc, re.MULTILINE))
    names = {name for pair in listed for name in pair if name}
    assert names == set(PLACEHOLDERS)
