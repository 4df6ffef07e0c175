"""The judge: pure. An observation of one case + its expectation -> an outcome with evidence.

Outcomes, in the order they are decided:

- ``error``: the harness or the setup failed (no producer, unreachable upstream, a position that
  does not exist); nothing can be said about the consumer.
- ``no_verdict`` (I4): the consumer produced no report before the deadline (hung or crashed).
- ``inconclusive`` (I5): a declared fault did not happen on the wire as declared; never a pass.
- ``violation``: an invariant broke (I1 integrity, I2 fail closed, I3 no stale contamination,
  I6 bounded buffering), whatever the scenario expected.
- ``fail``: the consumer's verdict, completeness or count differs from the expectation.
- ``pass``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.judging.results import Check, Outcome, expected_label
from harness.judging.timeline import Timeline
from harness.scenario.model import CountRange, Expect
from reference_impl.report import ConsumerReport

CUTTING_FAULTS = frozenset({"kill", "reconnect"})


@dataclass(frozen=True, slots=True)
class DeclaredFault:
    kind: str
    connection: int  # 0 = every connection
    direction: str


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything a case run saw. ``report`` is None when the consumer gave no verdict."""

    report: ConsumerReport | None
    timeline: Timeline
    declared: tuple[DeclaredFault, ...] = ()
    #: digests the producer fully wrote, per producer connection (None: external producer)
    producer_sent: tuple[tuple[str, ...], ...] | None = None
    producer_max_held: int | None = None
    channel_capacity: int = 2
    #: downstream offset where the last content message is committed on the expected wire
    payload_end: int | None = None
    #: how many leading messages of a stream carry its result (the rest only prove its end)
    content_messages: int | None = None
    #: the producer continues a stream across reconnects (check every connection's messages)
    resumes: bool = False
    #: why there is no report ("hung past the deadline", "exit 3: ..."), or a harness error
    consumer_problem: str = ""
    harness_error: str = ""


@dataclass(frozen=True, slots=True)
class Judgement:
    outcome: Outcome
    diagnosis: str
    checks: tuple[Check, ...] = field(default=())


def _subsequence_problem(accepted: Sequence[str], sent: Sequence[str]) -> str | None:
    """None if ``accepted`` appear in ``sent`` in order without repeats; else what broke."""
    position = 0
    for i, digest in enumerate(accepted):
        try:
            position = sent.index(digest, position) + 1
        except ValueError:
            again = "a duplicate or out of order" if digest in sent else "never sent"
            return f"accepted message {i + 1} (sha256 {digest[:12]}) is {again}"
    return None


def check_integrity(report: ConsumerReport, obs: Observation) -> tuple[Check, Check]:
    """I1 per connection, and I3: an I1 break on a connection that followed a reconnect."""
    if obs.producer_sent is None:
        skipped = "not judged: external producer (its sent log is unknown)"
        return Check("I1", None, skipped), Check("I3", None, skipped)
    for number in sorted({a.connection for a in report.accepted}):
        accepted = [a.sha256 for a in report.accepted if a.connection == number]
        sent = obs.producer_sent[number - 1] if number <= len(obs.producer_sent) else ()
        problem = _subsequence_problem(accepted, sent)
        if problem is not None:
            where = f"connection {number}: {problem}"
            if number > 1:
                return Check("I1", False, where), Check("I3", False, where + " after a reconnect")
            return Check("I1", False, where), Check("I3", True, "no reconnect involved")
    total = len(report.accepted)
    return (
        Check("I1", True, f"{total} accepted messages all byte-identical and in order"),
        Check("I3", True, f"{len(report.connections)} connection(s), no stale bytes accepted"),
    )


def check_fail_closed(report: ConsumerReport, obs: Observation) -> Check:
    """I2: a complete result only when the link delivered the whole stream."""
    if not report.complete:
        return Check("I2", True, "the consumer claimed no complete result")
    last = max(len(report.connections), 1)
    for record in obs.timeline.faults:
        cut_here = record.connection == last and record.direction == "downstream"
        early = obs.payload_end is None or (record.offset or 0) < obs.payload_end
        if record.name in CUTTING_FAULTS and cut_here and early:
            return Check(
                "I2",
                False,
                f"complete result although {record.name} cut connection "
                f"{last} at byte {record.offset} (payload ends at {obs.payload_end})",
            )
    needed = _needed_messages(obs, last)
    accepted = {a.sha256 for a in report.accepted}
    missing = [d for d in needed if d not in accepted]
    if missing:
        return Check(
            "I2",
            False,
            f"complete result but {len(missing)} of {len(needed)} messages that carry the "
            "result were never accepted",
        )
    return Check("I2", True, "complete result, and the whole stream was delivered")


def _needed_messages(obs: Observation, last: int) -> list[str]:
    """Digests a complete result must include: the content messages of the last connection's
    stream, or of the whole stream across connections when the producer resumes."""
    if obs.producer_sent is None or last > len(obs.producer_sent):
        return []
    if obs.resumes:
        sent = [d for conn in obs.producer_sent[:last] for d in conn]
    else:
        sent = list(obs.producer_sent[last - 1])
    return sent if obs.content_messages is None else sent[: obs.content_messages]


def check_bounded(obs: Observation) -> Check:
    """I6: the producer held at most C_cap + 1 messages (the channel plus the one in hand)."""
    if obs.producer_max_held is None:
        return Check("I6", None, "not judged: external producer")
    bound = obs.channel_capacity + 1
    ok = obs.producer_max_held <= bound
    return Check(
        "I6", ok, f"producer held at most {obs.producer_max_held} messages (bound {bound})"
    )


def check_fidelity(obs: Observation) -> Check:
    """I5: every declared fault fired on its connection and direction; every split was seen."""
    for fault in obs.declared:
        fired = [
            f
            for f in obs.timeline.faults
            if f.name == fault.kind
            and f.direction == fault.direction
            and fault.connection in (0, f.connection)
        ]
        if not fired:
            where = "any connection" if fault.connection == 0 else f"connection {fault.connection}"
            return Check("I5", False, f"{fault.kind} ({fault.direction}, {where}) never fired")
    unseen = obs.timeline.fired("boundary-unobserved")
    if unseen:
        return Check("I5", False, f"{len(unseen)} read boundaries not observed by the consumer")
    return Check("I5", True, f"{len(obs.timeline.faults)} fault applications on the wire")


def check_expectation(report: ConsumerReport, expect: Expect) -> Check:
    got = {report.verdict, report.error_code} - {None}
    problems: list[str] = []
    wanted = (expect.verdict,) if expect.verdict is not None else expect.any_of
    if wanted is not None and got.isdisjoint(wanted):
        problems.append(
            f"expected verdict {expected_label(expect)}, got {report.verdict}"
            + (
                f" (error {report.error_code})"
                if report.error_code and report.error_code != report.verdict
                else ""
            )
        )
    if expect.complete is not None and report.complete != expect.complete:
        problems.append(f"expected complete={expect.complete}, got complete={report.complete}")
    count = len(report.accepted)
    wanted_count = expect.accepted_messages
    if isinstance(wanted_count, CountRange):
        low, high = wanted_count.min, wanted_count.max
        if count < low or (high is not None and count > high):
            wanted_text = f"at least {low}" if high is None else f"{low}..{high}"
            problems.append(f"expected {wanted_text} accepted messages, got {count}")
    elif wanted_count is not None and count != wanted_count:
        problems.append(f"expected {wanted_count} accepted messages, got {count}")
    if problems:
        return Check("expect", False, "; ".join(problems))
    return Check("expect", True, f"{report.verdict}, complete={report.complete}, {count} accepted")


def judge(expect: Expect, obs: Observation) -> Judgement:
    if obs.harness_error:
        return Judgement(Outcome.ERROR, obs.harness_error)
    fidelity = check_fidelity(obs)
    if obs.report is None:
        why = obs.consumer_problem or "no report"
        return Judgement(
            Outcome.NO_VERDICT, f"I4: no verdict: {why}", (Check("I4", False, why), fidelity)
        )
    report = obs.report
    i1, i3 = check_integrity(report, obs)
    checks = (
        i1,
        check_fail_closed(report, obs),
        i3,
        Check("I4", True, "verdict reached before the deadline"),
        fidelity,
        check_bounded(obs),
        check_expectation(report, expect),
    )
    if fidelity.ok is False:
        return Judgement(Outcome.INCONCLUSIVE, f"I5: {fidelity.evidence}", checks)
    broken = [c for c in checks if c.name != "expect" and c.ok is False]
    if broken:
        return Judgement(
            Outcome.VIOLATION, "; ".join(f"{c.name}: {c.evidence}" for c in broken), checks
        )
    expectation = checks[-1]
    if expectation.ok is False:
        return Judgement(Outcome.FAIL, expectation.evidence, checks)
    return Judgement(Outcome.PASS, expectation.evidence, checks)
