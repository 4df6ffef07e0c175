"""Selection, budget and the conformance matrix (pure): JSON and HTML from synthetic results."""

from __future__ import annotations

import dataclasses
import json

from harness.consumers.catalogue import ADAPTERS, Adapter, by_name, missing_modules
from harness.evidence.timeline import Timeline
from harness.judging.results import CaseResult, Grade, Outcome, Target
from harness.matrix.grid import UNGRADED, Matrix, Skipped, build_row, to_json
from harness.matrix.page import counts_text, render
from harness.matrix.sampling import fits, for_function, unsupported, within_budget
from harness.scenario import Case, Origin
from tests.harness.conftest import one_case

SSE_ONLY = Adapter("x", "m:f", ("x",), ("x",), ("sse",))
OPENAI = by_name("openai")


def _case(link: str, file: str = "scenarios/fam-a/f.yaml", name: str = "t") -> Case:
    case = one_case(f"name: {name}\ndescription: d\nlink: {link}\nexpect: {{complete: true}}\n")
    origin = Origin(file, 1)
    scenario = dataclasses.replace(case.scenario, origin=origin)
    return dataclasses.replace(case, scenario=scenario, case_id=f"{file}::{name}")


def test_an_adapter_runs_only_the_links_it_speaks() -> None:
    assert OPENAI is not None
    assert fits(SSE_ONLY, _case("{framing: sse, payload: envelope}"))
    assert not fits(SSE_ONLY, _case("{framing: grpc, payload: envelope}"))
    assert fits(OPENAI, _case("{framing: sse, payload: tokens, tokens: {profile: openai}}"))
    assert not fits(OPENAI, _case("{framing: sse, payload: tokens, tokens: {profile: generic}}"))
    assert not fits(OPENAI, _case("{framing: sse, payload: messages}"))


def test_what_no_client_can_be_told_is_left_out() -> None:
    paused = _case("{framing: sse, payload: messages, consumer: {pause_at_message: 2}}")
    unframed = _case("{framing: ndjson, payload: messages, consumer: {unframed: true}}")
    assert "pauses" in unsupported(paused) and not fits(SSE_ONLY, paused)
    assert "unframed" in unsupported(unframed)


def test_a_budget_takes_every_family_in_turn() -> None:
    cases = [_case("{framing: sse, payload: messages}", f"s/a/{i}.yaml", "a") for i in range(5)]
    cases += [_case("{framing: sse, payload: messages}", "s/b/0.yaml", "b")]
    picked = within_budget(cases, 3)
    assert [c.case_id for c in picked] == ["s/a/0.yaml::a", "s/a/1.yaml::a", "s/b/0.yaml::b"]
    assert within_budget(cases, None) == cases


def test_retargeting_sets_the_function_only() -> None:
    case = for_function(_case("{framing: sse, payload: messages}"), "pkg.mod:fn")
    assert (case.scenario.link.consumer.function, case.scenario.link.consumer.command) == (
        "pkg.mod:fn",
        None,
    )


def test_the_table_names_every_adapter_of_the_issue() -> None:
    names = {a.name for a in ADAPTERS}
    assert {
        "openai",
        "openai-async",
        "anthropic",
        "httpx-sse",
        "sseclient-py",
        "aiohttp-sse",
        "aiohttp-ws",
        "websockets",
        "grpcio",
        "requests",
    } <= names
    assert missing_modules(
        Adapter("ghost", "m:f", ("no-such-dist",), ("no_such_module_x",), ("sse",))
    ) == ("no_such_module_x",)


def _result(
    case_id: str, file: str, outcome: Outcome, grade: Grade | None, diagnosis: str = ""
) -> CaseResult:
    return CaseResult(
        case_id=case_id,
        scenario="s",
        file=file,
        line=1,
        seed=7,
        outcome=outcome,
        diagnosis=diagnosis,
        checks=(),
        framing="sse",
        payload="messages",
        fault_kinds=(),
        expected="",
        params=(),
        duration_s=0.1,
        report=None,
        timeline=Timeline(),
        target=Target(function="pkg.mod:fn"),
        grade=grade,
    )


RESULTS = [
    _result("a::1", "scenarios/fam-a/a.yaml", Outcome.PASS, Grade.STRICT, "ok"),
    _result("a::2", "scenarios/fam-a/a.yaml", Outcome.FAIL, Grade.NON_STRICT, "other words"),
    _result("a::3", "scenarios/fam-a/a.yaml", Outcome.VIOLATION, Grade.FAILED, "I1: <fused>"),
    _result("b::1", "scenarios/fam-b/b.yaml", Outcome.PASS, Grade.STRICT),
    _result("b::2", "scenarios/fam-b/b.yaml", Outcome.INCONCLUSIVE, None, "I5: never fired"),
]


def test_a_row_counts_grades_per_family_and_keeps_the_worst() -> None:
    row = build_row("x", "x-lib", "1.0", "how", RESULTS)
    assert row.totals == {
        "strict": 2,
        "non-strict": 1,
        "failed": 1,
        "informational": 0,
        UNGRADED: 1,
    }
    a, b = row.cells
    assert (a.family, a.worst_case, a.worst) == ("fam-a", "a::3", "I1: <fused>")
    assert (b.family, b.counts["strict"], b.worst) == ("fam-b", 1, "I5: never fired")
    assert [f.case_id for f in row.failures] == ["a::3", "b::2"]
    assert row.failures[0].replay == (
        "tearline run scenarios/fam-a/a.yaml -k a::3 --seed 7 --consumer-function pkg.mod:fn"
    )


def test_json_and_html_show_the_same_matrix() -> None:
    matrix = Matrix(
        (build_row("x", "x-lib", "1.0", "how", RESULTS),),
        (Skipped("grpcio", "not installed (grpc): pip install grpcio"),),
        ("tearline", "clients"),
    )
    data = json.loads(to_json(matrix))
    assert data["families"] == ["fam-a", "fam-b"]
    assert data["rows"][0]["failures"][0]["diagnosis"] == "I1: <fused>"
    page = render(matrix)
    assert "I1: &lt;fused&gt;" in page and "<fused>" not in page
    assert "pip install grpcio" in page and "x-lib 1.0" in page
    assert counts_text(matrix.rows[0].totals) == "S 2 \u00b7 N 1 \u00b7 F 1 \u00b7 U 1"
