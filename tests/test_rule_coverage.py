"""Every parsing rule of every framing and payload has library cases that catch a consumer getting
it wrong (``harness/scenario/rules.py``, ``tearline rules``).

- ``tearline rules`` passes on the library: every rule names cases that exist, over its framing
  or payload, and every framing rule a case with a read boundary inside the rule's bytes.
- The mapping is proven where a consumer that gets the rule wrong is at hand: each broken
  consumer of ``tests/broken/`` below, run against its rule's cases exactly as a team runs its
  program (``tearline run --consumer``), is graded ``failed`` on at least one of them, while the
  same parser without the bug (``sse_rules none``) is graded ``failed`` on none.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.cli.scenario import load_cases, retarget
from harness.judging.results import CaseResult, Grade
from harness.running.execute import RunSettings, run_all
from harness.scenario import Case
from harness.scenario.rules import RULES, LibraryCase, Rule, coverage

ROOT = Path(__file__).resolve().parent.parent

#: rule -> the broken consumer (``tests/broken/`` module and its argument) that gets it wrong
GETS_IT_WRONG: dict[str, str] = {
    "sse/multi-line-data": "sse_rules joins-data-lines",
    "sse/one-leading-space": "sse_rules strips-every-space",
    "sse/line-ends": "sse_rules lone-cr-is-no-line-end",
    "sse/byte-order-mark": "sse_rules keeps-the-bom",
    "sse/comments": "sse_rules comment-dispatches",
    "sse/field-without-a-colon": "sse_rules colon-less-line-ignored",
    "sse/event-field": "sse_rules named-events-dropped",
    "sse/id-with-a-value": "sse_rules id-taken-before-dispatch",
    "sse/id-without-a-value": "sse_rules empty-id-ignored",
    "sse/retry-and-unknown-fields": "sse_rules unknown-field-refused",
    "sse/dispatch-at-the-blank-line": "sse_rules final-event-at-eof",
    "websocket/fragmentation": "ws_pieces",
    "ndjson/lf-separator": "splitlines",
    "ndjson/commit-at-the-line-feed": "tail_at_eof",
    "length-prefixed/length-limit": "trusts_length",
    "length-prefixed/body-not-committed-early": "commits_early",
    "envelope/trailer-required": "ignores_trailer",
    "envelope/checksum-compared": "skips_checksum",
    "envelope/sequence-checked": "ignores_sequence",
    "tokens/signal-required": "termination_completes",
}
BY_KEY = {rule.key: rule for rule in RULES}


@pytest.fixture(scope="module")
def library() -> list[Case]:
    return load_cases([str(ROOT / "scenarios")])


@pytest.fixture(scope="module", autouse=True)
def importable_broken_consumers() -> Iterator[None]:
    """The broken consumers are modules of this repository: ``python -m tests.broken.<m>``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(ROOT))
        yield


def test_tearline_rules_finds_a_case_for_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", str(ROOT / "scenarios")]) == 0
    out = capsys.readouterr().out
    print(out)
    assert out.splitlines()[-1] == f"{len(RULES)} rules, 0 without the cases they need"


def test_a_rule_without_a_case_fails() -> None:
    lonely = Rule("sse", "nothing", "no case names it", "here", ("nowhere::at-all",))
    (found,) = coverage([lonely], [LibraryCase("somewhere::else", "sse", "messages")])
    assert found.problem == "no case for nowhere::at-all"
    needing = Rule("sse", "whole-only", "no split case", "here", ("a::b",))
    (found,) = coverage([needing], [LibraryCase("a::b", "sse", "messages")])
    assert found.problem == "no case with a read boundary inside the rule's bytes"
    other = Rule("grpc", "other-framing", "a case of another framing", "here", ("a::b",), ("a::b",))
    (found,) = coverage([other], [LibraryCase("a::b", "sse", "messages")])
    assert found.problem == "no case for a::b, a::b"


def rule_cases(library: list[Case], rule: Rule) -> list[Case]:
    keys = {*rule.cases, *rule.boundary}
    return [
        c
        for c in library
        if c.case_id.split("[", 1)[0] in keys
        and rule.layer in (c.scenario.link.framing, c.scenario.link.payload)
    ]


def run_against(cases: list[Case], consumer: str) -> list[CaseResult]:
    command = f"{sys.executable} -m tests.broken.{consumer}"
    return run_all([retarget(c, command, None) for c in cases], RunSettings(jobs=2))


@pytest.mark.parametrize("key", sorted(GETS_IT_WRONG))
def test_a_consumer_that_gets_the_rule_wrong_is_caught(library: list[Case], key: str) -> None:
    rule = BY_KEY[key]
    results = run_against(rule_cases(library, rule), GETS_IT_WRONG[key])
    caught = [r.case_id for r in results if r.grade is Grade.FAILED]
    assert caught, f"{GETS_IT_WRONG[key]} passed every case of {key}"


def test_the_sse_parser_without_a_bug_passes_every_sse_rule(library: list[Case]) -> None:
    cases = {c.case_id: c for r in RULES if r.layer == "sse" for c in rule_cases(library, r)}
    results = run_against(list(cases.values()), "sse_rules none")
    failed = [(r.case_id, r.diagnosis) for r in results if r.grade is Grade.FAILED]
    assert failed == []
