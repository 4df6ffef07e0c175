"""Verdicts true at any length: a million messages judged exactly, in bounded memory.

Both sides are kept as they are during a run: the producer's stream in a ``Ledger`` (as the
proxy's live stream keeps it), the consumer's accepted messages in an ``AcceptedLog`` (as the
reference consumer and the worker keep them); the judge then sees each connection's first
``WINDOW`` digests and a count and running hash past them. Pure and in memory (a million
SHA-256 digests take about a second), not a million messages over sockets.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import pytest

import harness.link.live as live_module
import reference_impl.ledger as ledger_module
import reference_impl.report as report_module
from harness.evidence.connection import WireConnection
from harness.evidence.timeline import Timeline
from harness.judging.judge import DeclaredFault, Judgement, Observation, judge
from harness.judging.results import Outcome
from harness.link.live import LinkTraits, LiveStream
from harness.scenario import Expect
from reference_impl.ledger import WINDOW, Ledger, Past, is_prefix
from reference_impl.link.consumer_config import ConsumerConfig
from reference_impl.link.session import ConsumerSession
from reference_impl.report import (
    Accepted,
    AcceptedLog,
    AcceptedPast,
    ConsumerReport,
    Tally,
    accepted_total,
)

MILLION = 1_000_000
AT = 900_000  # where the fault is: message 900,000 (1-based)
DONE = "MESSAGE_COMPLETE"
CUT = "TRUNCATED"


@functools.cache
def stream(kind: str) -> tuple[str, ...]:
    """A million messages' digests: all different, or all the same message."""
    if kind == "identical":
        return (hashlib.sha256(b"same").hexdigest(),) * MILLION
    return tuple(hashlib.sha256(b"m%d" % i).hexdigest() for i in range(MILLION))


KINDS = ("distinct", "identical")


def other(i: int) -> str:
    return hashlib.sha256(b"changed %d" % i).hexdigest()


@functools.cache
def wire(sent: tuple[str, ...], *, ended: bool = True) -> tuple[WireConnection, ...]:
    ledger = Ledger(recent=True)
    for digest in sent:
        ledger.add(digest)
    return (
        WireConnection(
            number=1,
            sent=tuple(ledger.window),
            carrying=tuple(ledger.window),
            sent_past=ledger.past,
            carrying_count=ledger.count,
            carrying_through=ledger.count,
            producer_end=ended,
            delivered_end=ended,
            delivered=ledger.count,
        ),
    )


def consumer(accepted: Sequence[str], *, complete: bool, log: bool = False) -> ConsumerReport:
    """The report of a consumer that accepted ``accepted``: kept by an ``AcceptedLog`` as the
    reference consumer keeps them (``log``), or the same built at once (faster)."""
    if log:
        kept = AcceptedLog()
        for digest in accepted:
            kept.add(Accepted(digest, 10))
        listed, past = tuple(kept.listed), kept.past
    else:
        listed = tuple(Accepted(d, 10) for d in accepted[:WINDOW])
        tally = Tally.of(accepted[WINDOW:])
        past = (AcceptedPast(1, tally.count, tally.digest),) if tally.count else ()
    verdict = DONE if complete else CUT
    return ConsumerReport(
        verdict,
        complete,
        None if complete else CUT,
        accepted=listed,
        accepted_past=past,
    )


def judged(
    sent: tuple[str, ...],
    accepted: Sequence[str],
    *,
    complete: bool,
    log: bool = False,
    ended: bool = True,
    declared: tuple[DeclaredFault, ...] = (),
    line: Timeline | None = None,
) -> Judgement:
    obs = Observation(
        report=consumer(accepted, complete=complete, log=log),
        timeline=line or Timeline(),
        declared=declared,
        wire=wire(sent, ended=ended),
        producer_max_held=3,
    )
    return judge(Expect(complete=complete), obs)


def checks(judgement: Judgement) -> dict[str, bool | None]:
    return {c.name: c.ok for c in judgement.checks}


ALL_HELD = {"I1": True, "I2": True, "I3": True, "I4": True, "I5": True, "I6": True}


@pytest.mark.parametrize("kind", KINDS)
def test_a_clean_stream_of_a_million_messages_passes(kind: str) -> None:
    sent = stream(kind)
    judgement = judged(sent, sent, complete=True, log=True)
    assert (judgement.outcome, checks(judgement)) == (Outcome.PASS, {**ALL_HELD, "expect": True})
    i1 = judgement.checks[0]
    assert i1.evidence == f"{MILLION} accepted messages all byte-identical and in order"


def cut_at(kind: str) -> tuple[tuple[str, ...], Timeline, tuple[DeclaredFault, ...]]:
    """The producer's stream cut by a kill at message ``AT``: it sent ``AT`` messages (the
    last in flight), and a few thousand more before it saw the reset."""
    sent = stream(kind)[: AT + 3000]
    line = Timeline()
    line.fault(0.0, 1, "downstream", "kill", 123, "")
    return sent, line, (DeclaredFault("kill", 1, "downstream"),)


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_at_message_900000_is_judged_exactly(kind: str) -> None:
    sent, line, declared = cut_at(kind)
    got = sent[: AT - 1]  # the consumer accepted every whole message before the cut
    judgement = judged(sent, got, complete=False, ended=False, declared=declared, line=line)
    assert (judgement.outcome, checks(judgement)) == (Outcome.PASS, {**ALL_HELD, "expect": True})
    assert accepted_total(consumer(got, complete=False)) == AT - 1
    # a consumer that claims the result complete all the same breaks I2
    judgement = judged(sent, got, complete=True, ended=False, declared=declared, line=line)
    assert (judgement.outcome, checks(judgement)["I2"]) == (Outcome.VIOLATION, False)
    assert judgement.diagnosis.startswith("I2: complete result although kill cut connection 1")


def test_a_message_changed_at_900000_and_accepted_breaks_i1() -> None:
    sent = stream("distinct")
    got = [*sent[: AT - 1], other(AT), *sent[AT:]]
    judgement = judged(sent, got, complete=True)
    assert (judgement.outcome, checks(judgement)["I1"]) == (Outcome.VIOLATION, False)
    past = MILLION - WINDOW
    assert judgement.diagnosis.startswith(
        f"I1: connection 1: the {past} messages past message {WINDOW} are not those sent"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_message_accepted_twice_at_900000_breaks_i1(kind: str) -> None:
    sent = stream(kind)
    got = [*sent[:AT], sent[AT - 1], *sent[AT:]]
    judgement = judged(sent, got, complete=True)
    assert (judgement.outcome, checks(judgement)["I1"]) == (Outcome.VIOLATION, False)
    assert judgement.diagnosis.startswith(
        f"I1: connection 1: accepted {MILLION + 1} messages, the producer sent {MILLION}"
    )


def test_a_message_lost_at_900000_under_a_complete_claim_breaks_i2() -> None:
    sent = stream("distinct")
    got = [*sent[: AT - 1], *sent[AT:]]
    judgement = judged(sent, got, complete=True)
    assert (judgement.outcome, checks(judgement)["I2"]) == (Outcome.VIOLATION, False)
    assert "1 of 1000000 messages that carry the result on connection 1 were never" in (
        judgement.diagnosis
    )


def test_a_skip_past_the_window_that_cannot_be_told_is_never_a_pass() -> None:
    """Fewer accepted than sent, not the first ones, no complete claim: a skip (I1 holds) or
    a change (I1 breaks) past the window look alike in a count and a hash: inconclusive."""
    sent = stream("distinct")
    got = [*sent[: AT - 1], *sent[AT:-5]]
    judgement = judged(sent, got, complete=False)
    assert (judgement.outcome, checks(judgement)["I1"]) == (Outcome.INCONCLUSIVE, None)
    assert judgement.diagnosis.startswith("I1: cannot be told exactly: connection 1: ")


def test_the_running_hash_of_any_recent_count_is_kept() -> None:
    ledger = Ledger(recent=True)
    digests = [hashlib.sha256(b"%d" % i).hexdigest() for i in range(WINDOW + 10)]
    for digest in digests:
        ledger.add(digest)
    past = ledger.past
    assert (past.count, len(past.recent), len(ledger)) == (10, 10, WINDOW + 10)
    for n in range(11):
        chain = hashlib.sha256(b"".join(bytes.fromhex(d) for d in digests[WINDOW : WINDOW + n]))
        assert past.chain_at(n) == chain.hexdigest()
        assert is_prefix(
            digests[:WINDOW], Past(n, chain.hexdigest()), tuple(digests[:WINDOW]), past
        )
    assert Past(5, "00" * 32).chain_at(2) is None  # not kept: no recent hashes


def test_the_live_stream_and_the_reference_consumer_keep_a_window_and_a_tally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same bookkeeping as a run's, on a window of 10: the proxy's live stream and the
    reference consumer's session each keep 10 digests and tally the 20 after them, and the
    judge passes the clean stream exactly."""
    monkeypatch.setattr(ledger_module, "WINDOW", 10)
    monkeypatch.setattr(report_module, "MAX_ACCEPTED", 10)
    monkeypatch.setattr(live_module, "WINDOW", 10)
    messages = [b"message %d" % i for i in range(30)]
    wire_bytes = b"".join(len(m).to_bytes(4, "big") + m for m in messages)
    live = LiveStream(LinkTraits("length-prefixed", payload="messages"))
    session = ConsumerSession(ConsumerConfig("length-prefixed", "messages"))
    session.connect(0.0)
    for i in range(0, len(wire_bytes), 7):
        live.observe(wire_bytes[i : i + 7])
        session.receive(wire_bytes[i : i + 7], 0.0)
    live.observe_end("eof")
    session.end_of_stream("eof", 0.0)
    digests = [hashlib.sha256(m).hexdigest() for m in messages]
    report = session.report()
    assert (live.digests, live.ledger.past.count) == (digests[:10], 20)
    assert [a.sha256 for a in report.accepted] == digests[:10]
    assert report.accepted_past == (AcceptedPast(1, 20, Tally.of(digests[10:]).digest),)
    connection = WireConnection(
        number=1,
        sent=tuple(live.digests),
        carrying=live.carrying,
        sent_past=live.ledger.past,
        carrying_count=live.carrying_count,
        carrying_through=live.carrying_through,
        producer_end=live.reached_end,
        delivered_end=live.reached_end,
        delivered=live.ledger.count,
    )
    obs = Observation(report, Timeline(), wire=(connection,), producer_max_held=3)
    judgement = judge(Expect(complete=report.complete, accepted_messages=30), obs)
    assert (judgement.outcome, report.verdict, report.complete) == (
        Outcome.PASS,
        "MESSAGE_COMPLETE",
        False,
    )
