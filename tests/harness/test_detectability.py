"""Faults a protocol cannot show any consumer: declared by the payload, warned about, not held
against the consumer, and marked in the reports; where the payload numbers its messages, judged
in full.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.faults.effects import Effect
from harness.judging.results import CaseResult
from harness.link.blind import blind_warnings
from harness.link.reference import link_spec
from harness.reports.caseview import facts
from harness.reports.junit import junit_xml
from harness.reports.results_json import case_record
from harness.running.case import run_case
from harness.scenario import Case
from reference_impl.payload.detection import (
    Change,
    content_frames,
    detection,
    every_detection,
    table,
)
from reference_impl.payload.tokens import TokenStreamSpec, iter_messages
from tests.harness.conftest import PYTHON, one_case

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = "{framing: sse, payload: messages, messages: {count: 5, size_bytes: 40}}"
TOKENS = "{framing: ndjson, payload: tokens, tokens: {profile: openai, count: 5}}"
ENVELOPE = "{framing: sse, payload: envelope, envelope: {records: 6, chunk_records: 2}}"
#: each frame fault, its effect, and how many messages the reference accepts of the 5 messages
FRAME_FAULTS = {
    "{kind: drop_frame, frame: 2}": ("drop_frame", "loss", 4),
    "{kind: duplicate_frame, frame: 2}": ("duplicate_frame", "duplication", 6),
    "{kind: reorder_frames, frame: 2, with_frame: 4}": ("reorder_frames", "reordering", 5),
}


def case(link: str, fault: str, expect: str, command: list[str] | None = None) -> Case:
    if command is not None:
        link = link.removesuffix("}") + f", consumer: {{command: {command}}}}}".replace("'", '"')
    return one_case(
        f"name: t\ndescription: a blind fault\nlink: {link}\nfaults: [{fault}]\nexpect: {expect}\n"
    )


def warnings(c: Case) -> list[str]:
    scenario = c.scenario
    return blind_warnings([("f.yaml", 3, link_spec(scenario.link), scenario.faults)])


def test_the_docs_table_is_the_declaration() -> None:
    page = (ROOT / "docs" / "detectability.md").read_text()
    assert table() in page


def test_the_changes_are_fault_effects_and_each_row_decides_every_one() -> None:
    assert {c.value for c in Change} <= {e.value for e in Effect}
    for row in every_detection():
        decided = sorted([c for c, _ in row.seen] + [c for c, _ in row.unseen])
        assert decided == sorted(Change), row.name


def test_what_counts_tokens_sees_a_lost_one_and_what_does_not_cannot() -> None:
    def lost(profile: str, hint: bool, completion: bool = True) -> bool:
        spec = TokenStreamSpec(profile, ("a",), advertise_length=hint, send_completion=completion)
        return detection("tokens", spec).detects("loss")

    assert (lost("openai", False), lost("openai", True)) == (False, True)
    assert (lost("anthropic", False), lost("anthropic", True)) == (False, True)
    assert (lost("generic", False), lost("generic", False, completion=False)) == (True, False)
    assert not detection("tokens", TokenStreamSpec("generic", ("a",))).detects("reordering")
    assert all(detection("envelope").detects(c) for c in Change)


@pytest.mark.parametrize("fault", FRAME_FAULTS)
def test_validate_warns_once_per_blind_fault_with_its_reason(fault: str) -> None:
    kind, effect, _ = FRAME_FAULTS[fault]
    expect = "{complete: true}"
    assert warnings(case(MESSAGES, fault, expect)) == [
        f"f.yaml:3: warning: faults[0]: {kind} ({effect}) is undetectable by this protocol: "
        "the messages payload cannot show it to any consumer (nothing numbers the messages); "
        "the consumer is not held to it"
    ]
    (on_tokens,) = warnings(case(TOKENS, fault, expect))
    assert "the tokens (openai) payload cannot show it" in on_tokens
    assert warnings(case(ENVELOPE, fault, "{complete: false}")) == []


def marked(result: CaseResult, kind: str, effect: str, payload: str, why: str) -> None:
    note = f"{kind}: undetectable by this protocol ({payload}: {effect}: {why})"
    assert result.undetectable == (note,)
    assert ("undetectable", note, "") in facts(result)
    assert case_record(result, None)["undetectable"] == [note]
    document = junit_xml([result], pcaps={}, elapsed_s=0.0, timestamp="2026-01-01T00:00:00")
    xml = ElementTree.fromstring(document)
    found = [(p.get("name"), p.get("value")) for p in xml.iter("property")]
    assert found == [("undetectable", note)]


@pytest.mark.parametrize("fault", FRAME_FAULTS)
async def test_the_reference_passes_a_blind_frame_fault_on_messages(fault: str) -> None:
    kind, effect, accepted = FRAME_FAULTS[fault]
    expect = f"{{verdict: MESSAGE_COMPLETE, complete: true, accepted_messages: {accepted}}}"
    result = await run_case(case(MESSAGES, fault, expect))
    assert (result.outcome, result.diagnosis) == (
        "pass",
        f"MESSAGE_COMPLETE, complete=True, {accepted} accepted",
    )
    assert [c.ok for c in result.checks] == [True, True, True, True, True, True, True]
    marked(result, kind, effect, "messages", "nothing numbers the messages")


async def test_i2_says_how_many_a_blind_loss_took() -> None:
    fault = "{kind: drop_frame, frame: 2}"
    result = await run_case(case(MESSAGES, fault, "{complete: true}"))
    i2 = next(c for c in result.checks if c.name == "I2")
    assert i2.evidence == (
        "complete result, and the producer's end reached the consumer (1 lost where no "
        "consumer can see it: undetectable by this protocol)"
    )


@pytest.mark.parametrize("fault", FRAME_FAULTS)
async def test_the_reference_passes_a_blind_frame_fault_on_tokens(fault: str) -> None:
    kind, effect, _ = FRAME_FAULTS[fault]
    result = await run_case(case(TOKENS, fault, "{verdict: COMPLETE_EXPLICIT, complete: true}"))
    assert (result.outcome, result.checks[0].ok, result.checks[1].ok) == ("pass", True, True)
    why = {
        "loss": "nothing numbers or counts the deltas",
        "duplication": "nothing numbers or counts the deltas",
        "reordering": "nothing numbers the deltas: swapped ones still add up",
    }[effect]
    marked(result, kind, effect, "tokens (openai)", why)


async def test_a_blind_fault_that_never_fires_is_not_marked() -> None:
    fault = "{kind: drop_frame, frame: 9}"
    result = await run_case(case(MESSAGES, fault, "{complete: true}"))
    assert (result.outcome, result.undetectable) == ("inconclusive", ())


@pytest.mark.parametrize("fault", FRAME_FAULTS)
async def test_on_the_envelope_a_consumer_that_ignores_sequences_still_fails(fault: str) -> None:
    # the stream is cut before its trailer: only the sequence numbers show the chunk lost,
    # repeated or swapped, and the result corrupt rather than merely cut short
    fault = fault.replace("frame: 2", "frame: 3") + ", {kind: kill, how: fin, at: {frame: 5}}"
    expect = "{verdict: ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH, complete: false, accepted_messages: 0}"
    reference = await run_case(case(ENVELOPE, fault, expect))
    assert (reference.outcome, reference.undetectable) == ("pass", ())
    assert warnings(case(ENVELOPE, fault, expect)) == []
    command = [PYTHON, "-m", "tests.broken.ignores_sequence"]
    broken = await run_case(case(ENVELOPE, fault, expect, command))
    assert (broken.outcome, broken.diagnosis, broken.undetectable) == (
        "fail",
        "expected verdict ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH, got ERR_ZPARQL_STREAM_TRUNCATED",
        (),
    )


def test_only_frames_that_carry_content_are_blind() -> None:
    openai = TokenStreamSpec("openai", ("a", "b", "c"), advertise_length=True)
    frames = list(iter_messages(openai))  # hint, 3 deltas, finish, [DONE]
    assert content_frames("tokens", frames, openai) == {2, 3, 4}
    anthropic = TokenStreamSpec("anthropic", ("a", "b"))
    # message_start, content_block_start, 2 deltas, content_block_stop, message_delta, stop
    assert content_frames("tokens", iter_messages(anthropic), anthropic) == {3, 4}
    # a copy of [DONE] (frame 5 of 3 deltas and a finish) is a frame after the end, which
    # every consumer can see: judged in full, no warning
    link = "{framing: sse, payload: tokens, tokens: {profile: openai, count: 3}}"
    assert warnings(case(link, "{kind: duplicate_frame, frame: 5}", "{complete: false}")) == []
    assert len(warnings(case(link, "{kind: duplicate_frame, frame: 2}", "{complete: true}"))) == 1
    swap = "{kind: reorder_frames, frame: 3, with_frame: 4}"  # the last delta and the finish
    assert warnings(case(link, swap, "{complete: false}")) == []


async def test_a_frame_after_the_signal_is_still_judged_in_full() -> None:
    link = "{framing: sse, payload: tokens, tokens: {profile: openai, count: 3}}"
    fault = "{kind: duplicate_frame, frame: 5}"
    expect = "{verdict: MALFORMED_PAYLOAD, complete: false, accepted_messages: 0}"
    result = await run_case(case(link, fault, expect))
    assert (result.outcome, result.undetectable) == ("pass", ())


async def test_of_two_faults_of_a_kind_only_the_blind_one_is_forgiven() -> None:
    # delta 2 twice where nothing counts it, and [DONE] twice: the copy past the end is seen
    link = "{framing: sse, payload: tokens, tokens: {profile: openai, count: 3}}"
    faults = "{kind: duplicate_frame, frame: 2}, {kind: duplicate_frame, frame: 5}"
    c = case(link, faults, "{verdict: MALFORMED_PAYLOAD, complete: false, accepted_messages: 0}")
    (warned,) = warnings(c)
    assert warned.startswith("f.yaml:3: warning: faults[0]: duplicate_frame (duplication)")
    result = await run_case(c)
    assert (result.outcome, len(result.undetectable)) == ("pass", 1)
