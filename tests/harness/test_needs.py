"""What a case's expectation needs (``harness/judging/needs.py``) against what it really depends on.

The derivation reads the case (fault positions on the prepared link, the settings). The oracle
here runs the case in memory (``dry_run.py``: the clean stream through the case's fault stages,
into the reference consumer's pure core) and asks the consumer itself:

- ``incomplete_message_timeout``: a consumer with a read timeout only (the idle timeout from the
  last byte, as client libraries have) cannot meet the expectation, where the reference can;
- ``idle_timeout``: that one can, and a consumer without any timeout cannot;
- ``max_message_bytes``: a consumer without the size limit cannot;
- ``payload``: the case expects the whole result, and the bytes the consumer got are the clean
  stream's up to the point where the payload has proved its result (the shortest prefix of the
  clean stream that the consumer, cut there, already takes complete), and differ or stop after
  it: the result stood before any fault touched the stream.

"Cannot meet" is the grade rules' (a consumer graded ``failed``, its needs set aside). Every case
of the library goes through both; they must agree wherever the dry run models the case (and it
must model almost all).
"""

from __future__ import annotations

import multiprocessing
from collections import Counter

import pytest

from harness.judging.grades import grade
from harness.judging.judge import expectation_mismatches
from harness.judging.needs import case_needs, expects_whole
from harness.judging.results import Grade, Outcome
from harness.link.library import load_cases
from harness.link.reference import consumer_config, prepared_link
from harness.scenario import Case, Scenario
from reference_impl.link.session import ConsumerSession
from reference_impl.report import ConsumerReport
from tests.harness.dry_run import DryRun, _answering, dry_run

UNLIMITED = 1 << 40  # above any length a u32 prefix can declare
#: the share of library cases the dry run must model (the rest: external producers, upstream
#: faults, continued streams, TLS)
MODELLED_AT_LEAST = 0.99


def meets(run: DryRun | None, scenario: Scenario) -> bool:
    """Would a consumer that ended like ``run`` escape ``failed``, its needs set aside?"""
    if run is None or run.report is None:
        return False
    missed = [m.key for m in expectation_mismatches(run.report, scenario.expect)]
    outcome = Outcome.FAIL if missed else Outcome.PASS
    return grade(outcome, missed, scenario.expect, run.report) is not Grade.FAILED


def timed_out(report: ConsumerReport | None) -> bool:
    return report is None or any(c.end == "timeout" for c in report.connections)


def proof_point(scenario: Scenario, wire: bytes) -> int | None:
    """The shortest prefix of the clean stream that the reference consumer, cut there, takes as
    the complete result (None: none does)."""

    def complete_at(k: int) -> bool:
        session = ConsumerSession(consumer_config(scenario.link))
        answer = _answering(wire, session.connect(0.0))
        session.receive(answer[:k], 0.0)
        session.end_of_stream("eof", 0.0)
        return session.report().complete

    if not complete_at(len(wire)):
        return None
    low, high = 0, len(wire)  # complete_at(high) holds; find the smallest such k
    while low < high:
        middle = (low + high) // 2
        if complete_at(middle):
            high = middle
        else:
            low = middle + 1
    return low


def proved_then_broken(scenario: Scenario, run: DryRun) -> bool:
    if not expects_whole(scenario.expect) or not run.delivered:
        return False
    prepared = prepared_link(scenario)
    got = run.delivered[-1]
    # the clean stream as it answered the consumer's request on that connection
    wire = _answering(prepared.wire, prepared.request) if prepared.request else prepared.wire
    wire = _same_answer(wire, got)
    if got == wire:
        return False
    proof = proof_point(scenario, wire)
    if proof is None:
        return False
    same = next((i for i, (a, b) in enumerate(zip(got, wire, strict=False)) if a != b), None)
    diverges = min(len(got), len(wire)) if same is None else same
    return diverges >= proof


def _same_answer(wire: bytes, got: bytes) -> bytes:
    """``wire`` with the handshake answer ``got`` carries (a WebSocket accept token differs per
    connection), so that only what the faults did tells them apart."""
    marker = b"Sec-WebSocket-Accept: "
    at, there = wire.find(marker), got.find(marker)
    if at < 0 or there != at:
        return wire
    start = at + len(marker)
    return wire[:start] + got[start : start + 28] + wire[start + 28 :]


def depends_on(scenario: Scenario) -> frozenset[str] | None:
    """What the expectation depends on, by running the case (None: the dry run does not model
    it, or does not meet the expectation itself)."""
    base = dry_run(scenario)
    if base is None or not meets(base, scenario):
        return None
    found: set[str] = set()
    consumer = scenario.link.consumer
    waited = base.longest_wait_s * 1000 >= consumer.idle_timeout_ms
    paused = consumer.pause_at_message is not None
    if waited or paused or timed_out(base.report):
        reader = dry_run(scenario, waiting="read-timeout")
        if not meets(reader, scenario):
            found.add("incomplete_message_timeout")
        elif (timed_out(base.report) or (reader is not None and timed_out(reader.report))) and (
            not meets(dry_run(scenario, waiting="none"), scenario)
        ):
            found.add("idle_timeout")
    too_large = base.report is not None and "FRAME_TOO_LARGE" in (
        base.report.verdict,
        base.report.error_code,
    )
    if too_large and not meets(dry_run(scenario, max_message_bytes=UNLIMITED), scenario):
        found.add("max_message_bytes")
    if proved_then_broken(scenario, base):
        found.add("payload")
    return frozenset(found)


def judged(case: Case) -> tuple[str, frozenset[str], frozenset[str] | None]:
    return case.case_id, case_needs(case.scenario), depends_on(case.scenario)


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[str, frozenset[str], frozenset[str] | None]]:
    # an MCP session (payload mcp) has no stream expectation to need anything for: it is
    # judged by its session (harness/judging/mcp.py)
    cases = [c for c in load_cases(["scenarios"], "") if c.scenario.link.payload != "mcp"]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        return pool.map(judged, cases, chunksize=64)


def test_the_dry_run_models_almost_every_case(
    outcomes: list[tuple[str, frozenset[str], frozenset[str] | None]],
) -> None:
    modelled = sum(1 for _, _, oracle in outcomes if oracle is not None)
    print(f"\n{modelled} of {len(outcomes)} library cases run in memory")
    assert modelled >= MODELLED_AT_LEAST * len(outcomes)


def test_every_case_needs_what_its_expectation_depends_on(
    outcomes: list[tuple[str, frozenset[str], frozenset[str] | None]],
) -> None:
    disagree = Counter(
        (case_id.split("[", 1)[0], tuple(sorted(derived)), tuple(sorted(oracle)))
        for case_id, derived, oracle in outcomes
        if oracle is not None and derived != oracle
    )
    needed = Counter(n for _, derived, _ in outcomes for n in derived)
    print(f"\nneeds in the library: {dict(needed)}")
    assert not disagree, "\n".join(
        f"{count} x {key}: derived {derived}, depends on {oracle}"
        for (key, derived, oracle), count in sorted(disagree.items())
    )
