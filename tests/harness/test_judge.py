"""The judge, pure: constructed observations for every outcome, with the exact diagnosis."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import pytest

from harness.evidence.connection import WireConnection
from harness.evidence.timeline import HowEnded, Timeline
from harness.judging.judge import DeclaredFault, Judgement, Observation, judge
from harness.judging.results import Check, Outcome
from harness.scenario import CountRange, Expect
from reference_impl.report import Accepted, ConnectionSummary, ConsumerReport

VERIFIED = "RESULT_VERIFIED"
TRUNCATED = "ERR_ZPARQL_STREAM_TRUNCATED"
MISMATCH = "ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


M1, M2, M3 = digest("m1"), digest("m2"), digest("m3")
SENT = (M1, M2, M3)
EXPECT_VERIFIED = Expect(verdict=VERIFIED, complete=True)


def report(
    accepted: Sequence[str | tuple[str, int]] = SENT,
    *,
    verdict: str = VERIFIED,
    complete: bool = True,
    error_code: str | None = None,
    connections: int = 1,
) -> ConsumerReport:
    """A consumer report; ``accepted`` digests are on connection 1 unless paired with one."""
    summary = ConnectionSummary("stream-end", "MESSAGE_COMPLETE", error_code, 1, 100)
    return ConsumerReport(
        verdict,
        complete,
        error_code,
        accepted=tuple(
            Accepted(a, 2) if isinstance(a, str) else Accepted(a[0], 2, a[1]) for a in accepted
        ),
        connections=(summary,) * connections,
    )


def timeline(*faults: tuple[str, int, int | None]) -> Timeline:
    """A timeline with these (name, connection, offset) downstream fault records."""
    line = Timeline()
    for name, connection, offset in faults:
        line.fault(0.0, connection, "downstream", name, offset, "")
    return line


def observe(
    consumer: ConsumerReport | None = None,
    *,
    line: Timeline | None = None,
    declared: tuple[DeclaredFault, ...] = (),
    sent: tuple[tuple[str, ...], ...] | None = (SENT,),
    max_held: int | None = 3,
    problem: str = "",
    harness_error: str = "",
    ended: Sequence[bool] = (),
) -> Observation:
    """``sent``: what the producer sent on each connection; ``ended[i]``: connection i+1
    delivered the producer's end (default: yes, unless a kill or reconnect cut it)."""
    cut = {r.connection for r in (line or Timeline()).faults if r.name in ("kill", "reconnect")}
    wire = None
    if sent is not None:
        wire = tuple(
            WireConnection(
                number=n,
                sent=messages,
                carrying=messages,
                producer_end=True,
                delivered_end=ended[n - 1] if n <= len(ended) else n not in cut,
                delivered=len(messages),
            )
            for n, messages in enumerate(sent, start=1)
        )
    return Observation(
        report=consumer,
        timeline=line or Timeline(),
        declared=declared,
        wire=wire,
        producer_max_held=max_held,
        channel_capacity=2,
        consumer_problem=problem,
        harness_error=harness_error,
    )


def test_pass_with_every_check() -> None:
    assert judge(EXPECT_VERIFIED, observe(report())) == Judgement(
        Outcome.PASS,
        "RESULT_VERIFIED, complete=True, 3 accepted",
        (
            Check("I1", True, "3 accepted messages all byte-identical and in order"),
            Check("I2", True, "complete result, and the producer's end reached the consumer"),
            Check("I3", True, "1 connection(s), no stale bytes accepted"),
            Check("I4", True, "verdict reached before the deadline"),
            Check("I5", True, "0 fault applications on the wire"),
            Check("I6", True, "producer held at most 3 messages (bound 3)"),
            Check("expect", True, "RESULT_VERIFIED, complete=True, 3 accepted"),
        ),
    )


def test_pass_on_a_cut_that_failed_closed() -> None:
    cut = observe(
        report([M1], verdict="STALE_PARTIAL_BUFFER", complete=False, error_code=TRUNCATED),
        line=timeline(("kill", 1, 50)),
        declared=(DeclaredFault("kill", 1, "downstream"),),
    )
    result = judge(Expect(verdict=TRUNCATED, complete=False, accepted_messages=1), cut)
    assert (result.outcome, result.diagnosis) == (
        "pass",
        "STALE_PARTIAL_BUFFER, complete=False, 1 accepted",
    )
    assert result.checks[4] == Check("I5", True, "1 fault applications on the wire")


def test_an_external_producer_is_judged_from_the_wire_except_i6() -> None:
    result = judge(EXPECT_VERIFIED, observe(report(), max_held=None))
    assert result.outcome == "pass"
    unjudged = [c for c in result.checks if c.ok is None]
    assert unjudged == [
        Check("I6", None, "not judged: what a producer tearline did not write holds is not known")
    ]


def test_a_stream_never_observed_leaves_i1_i2_i3_unjudged() -> None:
    result = judge(EXPECT_VERIFIED, observe(report(), sent=None))
    unjudged = [c for c in result.checks if c.ok is None]
    assert unjudged == [
        Check("I1", None, "not judged: the producer's stream was not observed"),
        Check("I2", None, "not judged: the producer's stream was not observed"),
        Check("I3", None, "not judged: the producer's stream was not observed"),
    ]


@pytest.mark.parametrize(
    ("expect", "consumer", "diagnosis"),
    [
        (
            Expect(verdict=TRUNCATED),
            report(),
            "expected verdict ERR_ZPARQL_STREAM_TRUNCATED, got RESULT_VERIFIED",
        ),
        (
            Expect(verdict=TRUNCATED),
            report([M1], verdict="STALE_PARTIAL_BUFFER", complete=False, error_code=MISMATCH),
            "expected verdict ERR_ZPARQL_STREAM_TRUNCATED, got STALE_PARTIAL_BUFFER "
            "(error ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH)",
        ),
        (
            Expect(any_of=("COMPLETE_EXPLICIT", "COMPLETE_BY_LENGTH")),
            report(verdict="PARTIAL_MID_TOKEN", complete=False),
            "expected verdict COMPLETE_EXPLICIT | COMPLETE_BY_LENGTH, got PARTIAL_MID_TOKEN",
        ),
        (Expect(complete=False), report(), "expected complete=False, got complete=True"),
        (Expect(accepted_messages=2), report(), "expected 2 accepted messages, got 3"),
        (
            Expect(accepted_messages=CountRange(0, 2)),
            report(),
            "expected 0..2 accepted messages, got 3",
        ),
        (
            Expect(accepted_messages=CountRange(4)),
            report(),
            "expected at least 4 accepted messages, got 3",
        ),
        (
            Expect(verdict=TRUNCATED, complete=False, accepted_messages=0),
            report(),
            "expected verdict ERR_ZPARQL_STREAM_TRUNCATED, got RESULT_VERIFIED; "
            "expected complete=False, got complete=True; expected 0 accepted messages, got 3",
        ),
    ],
)
def test_fail_names_every_difference(
    expect: Expect, consumer: ConsumerReport, diagnosis: str
) -> None:
    result = judge(expect, observe(consumer))
    assert (result.outcome, result.diagnosis) == ("fail", diagnosis)
    assert result.checks[-1] == Check("expect", False, diagnosis)


def test_any_of_matches_the_error_code_too() -> None:
    consumer = report([M1], verdict="STALE_PARTIAL_BUFFER", complete=False, error_code=TRUNCATED)
    result = judge(Expect(any_of=(MISMATCH, TRUNCATED)), observe(consumer))
    assert result.outcome == "pass"


@pytest.mark.parametrize(
    ("accepted", "diagnosis"),
    [
        (
            [M1, digest("m2m3")],  # two messages fused into one
            f"I1: connection 1: accepted message 2 (2 B, sha256 {digest('m2m3')[:12]}) is never "
            f"sent; the producer sent sha256 {M2[:12]} there",
        ),
        (
            [M1, M1],
            f"I1: connection 1: accepted message 2 (2 B, sha256 {M1[:12]}) is a duplicate or out "
            f"of order; the producer sent sha256 {M2[:12]} there",
        ),
        (
            [M2, M1],
            f"I1: connection 1: accepted message 2 (2 B, sha256 {M1[:12]}) is a duplicate or out "
            f"of order; the producer sent sha256 {M3[:12]} there",
        ),
    ],
)
def test_violation_i1(accepted: list[str], diagnosis: str) -> None:
    consumer = report(accepted, verdict="MESSAGE_IN_PROGRESS", complete=False)
    result = judge(Expect(complete=False), observe(consumer))
    assert (result.outcome, result.diagnosis) == ("violation", diagnosis)
    assert result.checks[2] == Check("I3", True, "no reconnect involved")


def test_violation_i2_complete_after_a_cut_before_the_producers_end() -> None:
    obs = observe(
        report(),
        line=timeline(("kill", 1, 50)),
        declared=(DeclaredFault("kill", 1, "downstream"),),
    )
    result = judge(EXPECT_VERIFIED, obs)
    assert (result.outcome, result.diagnosis) == (
        "violation",
        "I2: complete result although kill cut connection 1 at byte 50: the consumer's side "
        "got 3 messages and no end",
    )


def test_a_cut_after_the_producers_end_reached_the_consumer_lost_nothing() -> None:
    obs = observe(
        report(),
        line=timeline(("kill", 1, 100)),
        declared=(DeclaredFault("kill", 1, "downstream"),),
        ended=(True,),
    )
    assert judge(EXPECT_VERIFIED, obs).outcome == "pass"


def test_violation_i2_complete_although_the_producer_never_ended() -> None:
    obs = observe(report(), ended=(False,))
    assert replace(obs, wire=None).wire is None
    result = judge(EXPECT_VERIFIED, obs)
    assert result.diagnosis == (
        "I2: complete result although the faults on connection 1 kept the producer's end from "
        "it: the consumer's side got 3 messages and no end"
    )
    assert obs.wire is not None
    ended_never = replace(obs.wire[0], producer_end=False)
    result = judge(EXPECT_VERIFIED, replace(obs, wire=(ended_never,)))
    assert result.diagnosis == (
        "I2: complete result although the producer never reached its own end on connection 1: "
        "the consumer's side got 3 messages and no end"
    )


def test_violation_i2_complete_with_messages_missing() -> None:
    result = judge(EXPECT_VERIFIED, observe(report([M1, M2])))
    assert (result.outcome, result.diagnosis) == (
        "violation",
        "I2: complete result but 1 of 3 messages that carry the result were never accepted",
    )


def test_violation_i3_stale_bytes_after_a_reconnect() -> None:
    stale = digest("m2-stale-prefix+m3")
    consumer = report(
        [(M1, 1), (stale, 2)], verdict="DISCARD_AND_RESET", complete=False, connections=2
    )
    result = judge(Expect(complete=False), observe(consumer, sent=(SENT, SENT)))
    problem = (
        f"connection 2: accepted message 1 (2 B, sha256 {stale[:12]}) is never sent; "
        f"the producer sent sha256 {M1[:12]} there"
    )
    assert (result.outcome, result.diagnosis) == (
        "violation",
        f"I1: {problem}; I3: {problem} (after a reconnect)",
    )


def test_violation_i6_the_producer_held_too_much() -> None:
    result = judge(EXPECT_VERIFIED, observe(report(), max_held=4))
    assert (result.outcome, result.diagnosis) == (
        "violation",
        "I6: producer held at most 4 messages (bound 3)",
    )


@pytest.mark.parametrize(
    ("problem", "diagnosis"),
    [
        ("", "I4: no verdict: no report"),
        (
            "consumer exited 3 without a report; stderr: 'boom'",
            "I4: no verdict: consumer exited 3 without a report; stderr: 'boom'",
        ),
    ],
)
def test_no_verdict(problem: str, diagnosis: str) -> None:
    result = judge(EXPECT_VERIFIED, observe(None, problem=problem))
    assert result == Judgement(
        Outcome.NO_VERDICT,
        diagnosis,
        (
            Check("I4", False, problem or "no report"),
            Check("I5", True, "0 fault applications on the wire"),
        ),
    )


#: what an inconclusive case shows of the consumer of these tests
ENDED = (
    "; the consumer ended STALE_PARTIAL_BUFFER (complete=False, 1 accepted, error "
    "ERR_ZPARQL_STREAM_TRUNCATED)"
)


@pytest.mark.parametrize(
    ("declared", "fired", "diagnosis"),
    [
        (
            DeclaredFault("kill", 1, "downstream"),
            (),
            "I5: kill (downstream, connection 1) never fired" + ENDED,
        ),
        # What fired was another fault, on another direction, on another connection:
        (
            DeclaredFault("split", 0, "downstream"),
            (("kill", 1, 10),),
            "I5: split (downstream, any connection) never fired" + ENDED,
        ),
        (
            DeclaredFault("kill", 1, "upstream"),
            (("kill", 1, 10),),
            "I5: kill (upstream, connection 1) never fired" + ENDED,
        ),
        (
            DeclaredFault("kill", 2, "downstream"),
            (("kill", 1, 10),),
            "I5: kill (downstream, connection 2) never fired" + ENDED,
        ),
    ],
)
def test_inconclusive_when_a_declared_fault_never_fired(
    declared: DeclaredFault, fired: tuple[tuple[str, int, int], ...], diagnosis: str
) -> None:
    consumer = report([M1], verdict="STALE_PARTIAL_BUFFER", complete=False, error_code=TRUNCATED)
    obs = observe(consumer, line=timeline(*fired), declared=(declared,))
    result = judge(Expect(verdict=TRUNCATED), obs)
    assert (result.outcome, result.diagnosis) == ("inconclusive", diagnosis)


def test_i5_names_every_fault_that_never_fired() -> None:
    declared = (
        DeclaredFault("kill", 1, "downstream"),
        DeclaredFault("split", 0, "downstream"),
        DeclaredFault("latency", 2, "upstream"),
    )
    obs = observe(report(), line=timeline(("split", 1, 10)), declared=declared)
    result = judge(EXPECT_VERIFIED, obs)
    assert (result.outcome, result.diagnosis) == (
        "inconclusive",
        "I5: kill (downstream, connection 1) never fired; latency (upstream, connection 2) "
        "never fired; the consumer ended RESULT_VERIFIED (complete=True, 3 accepted)",
    )


def test_inconclusive_when_a_read_boundary_was_not_observed() -> None:
    line = timeline(("split", 1, 10), ("boundary-unobserved", 1, None))
    obs = observe(report(), line=line, declared=(DeclaredFault("split", 1, "downstream"),))
    result = judge(EXPECT_VERIFIED, obs)
    assert (result.outcome, result.diagnosis) == (
        "inconclusive",
        "I5: 1 read boundaries not observed by the consumer; the consumer ended "
        "RESULT_VERIFIED (complete=True, 3 accepted)",
    )


def test_error_is_the_harness_error_alone() -> None:
    obs = observe(report(), harness_error="faults[0].at: frame: the stream has 6 frames, not 9")
    assert judge(EXPECT_VERIFIED, obs) == Judgement(
        Outcome.ERROR, "faults[0].at: frame: the stream has 6 frames, not 9"
    )


# ---- precedence: error > no_verdict > inconclusive > violation > fail

NEVER_FIRED = (DeclaredFault("kill", 1, "downstream"),)
FUSED = report([digest("fused")], verdict="MESSAGE_COMPLETE", complete=False)


@pytest.mark.parametrize(
    ("obs", "outcome"),
    [
        (observe(None, declared=NEVER_FIRED, harness_error="setup broke"), "error"),
        (observe(FUSED, harness_error="setup broke"), "error"),
        (observe(None, declared=NEVER_FIRED, problem="hung"), "no_verdict"),
        (observe(FUSED, declared=NEVER_FIRED), "inconclusive"),
        (observe(FUSED, max_held=9), "violation"),
    ],
)
def test_precedence(obs: Observation, outcome: str) -> None:
    # The expectation is missed in every one of them, so "fail" always loses.
    assert judge(Expect(verdict=TRUNCATED, complete=True), obs).outcome == outcome


def test_violation_beats_fail_and_lists_every_broken_invariant() -> None:
    result = judge(Expect(verdict=TRUNCATED, complete=True), observe(FUSED, max_held=9))
    fused = digest("fused")[:12]
    assert result.diagnosis == (
        f"I1: connection 1: accepted message 1 (2 B, sha256 {fused}) is never sent; "
        f"the producer sent sha256 {M1[:12]} there; I6: producer held at most 9 messages (bound 3)"
    )
    assert result.checks[-1].ok is False


def test_every_violation_is_listed_per_connection_with_what_was_sent_there() -> None:
    """A consumer that gets every message wrong on both connections: each one is named, with
    previews of what it accepted and of what the producer sent at that place."""
    bad = [
        Accepted(digest(f"x{i}"), 2, connection, f"x{i}") for connection in (1, 2) for i in (1, 2)
    ]
    consumer = replace(report(verdict="MESSAGE_COMPLETE", complete=False), accepted=tuple(bad))
    obs = replace(observe(consumer, sent=(SENT, SENT)), previews={M1: "m1", M2: "m2", M3: "m3"})
    result = judge(Expect(complete=False), obs)
    lines = [
        f"connection {c}: accepted message {i} ('x{i}', 2 B, sha256 {digest(f'x{i}')[:12]}) is "
        f"never sent; the producer sent 'm1' (sha256 {M1[:12]}) there"
        for c in (1, 2)
        for i in (1, 2)
    ]
    assert result.checks[0] == Check("I1", False, "; ".join(lines))
    assert result.checks[2] == Check("I3", False, "; ".join(lines[2:]) + " (after a reconnect)")


def test_a_report_without_connections_is_judged_by_the_proxy_s_connections() -> None:
    """``connections`` is optional: a consumer that reconnected but did not list them is
    judged on its last connection all the same (the proxy saw two)."""
    line = timeline(("reconnect", 1, 50))
    line.ended(0.0, 2, "downstream", HowEnded.EOF, 100)
    consumer = replace(report([(M1, 2), (M2, 2), (M3, 2)]), connections=())
    obs = replace(
        observe(consumer, line=line, sent=(SENT[:1], SENT)),
        declared=(DeclaredFault("reconnect", 1, "downstream"),),
    )
    assert judge(EXPECT_VERIFIED, obs).outcome == "pass"


BLIND = (("duplication", "nothing numbers the messages"),)


@pytest.mark.parametrize(
    ("blind", "i1"),
    [
        ((), (False, "connection 1: accepted message 3 (2 B, sha256 ")),  # judged in full
        (BLIND, (True, "4 accepted messages all byte-identical and in order")),
    ],
)
def test_a_repeated_message_breaks_i1_only_where_the_protocol_could_show_it(
    blind: tuple[tuple[str, str], ...], i1: tuple[bool, str]
) -> None:
    # M2 written twice on the way: the consumer's side received M1 M2 M2 M3 and accepted it all
    fault = DeclaredFault("duplicate_frame", 1, "downstream", blind)
    obs = replace(
        observe(report([M1, M2, M2, M3]), line=timeline(("duplicate_frame", 1, 10))),
        declared=(fault,),
        payload="messages",
    )
    assert obs.wire is not None
    wire = (replace(obs.wire[0], received=(M1, M2, M2, M3), delivered=4),)
    result = judge(EXPECT_VERIFIED, replace(obs, wire=wire))
    (check,) = [c for c in result.checks if c.name == "I1"]
    assert (check.ok, check.evidence[: len(i1[1])]) == i1
    assert result.undetectable == (
        (
            "duplicate_frame: undetectable by this protocol (messages: duplication: nothing "
            "numbers the messages)",
        )
        if blind
        else ()
    )
