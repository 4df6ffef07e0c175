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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.evidence.connection import WireConnection, connection, needed_messages
from harness.evidence.timeline import Timeline
from harness.faults.effects import Effect
from harness.faults.registry import fault_class
from harness.judging.attempts import Attempts, Handed, attempt_problems, keeps_messages
from harness.judging.blind import blind_fired, blind_notes, removed_unseen
from harness.judging.grades import Circumstances, grade, transported_grade
from harness.judging.results import Check, Grade, Outcome, expected_label
from harness.link.blind import UNDETECTABLE
from harness.scenario.model import CountRange, Expect
from reference_impl.ledger import WINDOW, Past, is_prefix
from reference_impl.report import ConsumerReport, accepted_past, accepted_total


@dataclass(frozen=True, slots=True)
class DeclaredFault:
    kind: str
    connection: int  # 0 = every connection
    direction: str
    #: ``(effect, why)`` of what it does to whole messages that no consumer of the link's
    #: payload can see (``harness.link.blind``): the consumer is not held to those
    blind: tuple[tuple[str, str], ...] = ()
    #: the exchange of a session it names instead of a connection (``the 2nd tools/call``):
    #: it may fire on any connection, the one that exchange came on
    exchange: str = ""


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything a case run saw. ``report`` is None when the consumer gave no verdict."""

    report: ConsumerReport | None
    timeline: Timeline
    declared: tuple[DeclaredFault, ...] = ()
    #: the producer's stream on each connection, as the proxy decoded it (None: not observed,
    #: the case did not get that far)
    wire: tuple[WireConnection, ...] | None = None
    #: most messages the producer held at once (tearline's producer; None: not known)
    producer_max_held: int | None = None
    channel_capacity: int = 2
    #: the producer continues a stream across reconnects (check every connection's messages)
    resumes: bool = False
    #: why there is no report ("hung past the deadline", "exit 3: ..."), or a harness error
    consumer_problem: str = ""
    harness_error: str = ""
    #: what was cut from an oversized report before judging (``reference_impl.report.bounded``)
    report_cuts: tuple[str, ...] = ()
    #: the consumer is not the reference one: it is graded (``grades.py``)
    foreign: bool = False
    #: a foreign consumer below the payload layer: a client library that hands on what the
    #: transport delivered, whatever the payload (``grades.transported_grade``)
    transport_client: bool = False
    #: what a foreign consumer cannot be given (``Need``s its client library does not honour:
    #: ``grades.grade``); empty for a consumer told everything by the contract
    lacks: frozenset[str] = frozenset()
    #: what the case's expectation needs the consumer to be given, derived from the case
    #: (``needs.case_needs``; only a foreign consumer's grade reads it)
    needs: frozenset[str] = frozenset()

    #: a short text of each message the producer can send, by digest (for diagnoses)
    previews: Mapping[str, str] = field(default_factory=dict)
    #: the link's payload, as the notes of faults it cannot show name it
    payload: str = ""

    def preview(self, digest: str) -> str:
        """The message with ``digest`` as a diagnosis shows it."""
        shown = self.previews.get(digest)
        return f"{shown!r} (sha256 {digest[:12]})" if shown else f"sha256 {digest[:12]}"

    def as_sent(self, digest: str, number: int) -> str:
        """The digest the producer sent for ``digest`` accepted on connection ``number``."""
        found = None if self.wire is None else connection(self.wire, number)
        for sent, delivered in () if found is None else found.delivered_as:
            if digest == delivered:
                return sent
        return digest


@dataclass(frozen=True, slots=True)
class Judgement:
    outcome: Outcome
    diagnosis: str
    checks: tuple[Check, ...] = field(default=())
    #: a foreign consumer's grade (None for the reference consumer; see grades.py)
    grade: Grade | None = None
    #: each fault that fired and that no consumer of this protocol could see (``blind_notes``)
    undetectable: tuple[str, ...] = ()


MAX_PROBLEMS = 8  # problems a check lists in full; the rest are counted


def _subsequence_problems(
    accepted: Sequence[tuple[str, str]], sent: Sequence[str], preview: Callable[[str], str]
) -> list[str]:
    """What breaks "``accepted`` appear in ``sent`` in order, without repeats", every place
    it breaks; ``accepted`` pairs (digest as sent, its preview)."""
    problems: list[str] = []
    position = 0
    for i, (digest, shown) in enumerate(accepted):
        try:
            position = sent.index(digest, position) + 1
            continue
        except ValueError:
            pass
        there = (
            f"; the producer sent {preview(sent[position])} there" if position < len(sent) else ""
        )
        again = "a duplicate or out of order" if digest in sent else "never sent"
        problems.append(f"accepted message {i + 1} {shown} is {again}{there}")
    return problems


def _shown(report_preview: str | None, digest: str, size: int) -> str:
    text = f"{report_preview!r}, " if report_preview is not None else ""
    return f"({text}{size} B, sha256 {digest[:12]})"


def _listed(problems: Sequence[str]) -> str:
    more = len(problems) - MAX_PROBLEMS
    shown = "; ".join(problems[:MAX_PROBLEMS])
    return shown + (f"; and {more} more" if more > 0 else "")


def check_integrity(report: ConsumerReport, obs: Observation) -> tuple[Check, Check]:
    """I1 per connection, every place it breaks; I3: I1 breaks on a connection that
    followed a reconnect, or the accepted messages break the result across attempts
    (``attempts.py``: a message of an abandoned attempt, one handed on twice, a gap at a
    resume point)."""
    i1, i3, _ = _integrity(report, obs)
    return i1, i3


def _integrity(report: ConsumerReport, obs: Observation) -> tuple[Check, Check, bool]:
    """I1 and I3, and whether either cannot be told (past the window: ``ledger.py``)."""
    if obs.wire is None:
        skipped = "not judged: the producer's stream was not observed"
        return Check("I1", None, skipped), Check("I3", None, skipped), False
    problems: dict[int, list[str]] = {}
    untold: list[str] = []
    numbers = {a.connection for a in report.accepted} | {p.connection for p in report.accepted_past}
    for number in sorted(numbers):
        found, why = _connection_integrity(report, obs, number)
        if found:
            problems[number] = [f"connection {number}: {p}" for p in found]
        elif why:
            untold.append(f"connection {number}: {why}")
    every = [p for number in sorted(problems) for p in problems[number]]
    stale = [p for number in sorted(problems) if number > 1 for p in problems[number]]
    if every:
        i1 = Check("I1", False, _listed(every))
    elif untold:
        i1 = Check("I1", None, f"cannot be told exactly: {_listed(untold)}")
    else:
        i1 = _integrity_held(report, obs)
    if report.accepted_past and consumer_connections(report, obs) > 1 and not stale:
        why = f"not judged: a reconnect with more than {WINDOW} messages on a connection"
        return i1, Check("I3", None, why), bool(untold)
    across = attempt_problems(_handed(report, obs), _attempts(report, obs))
    return i1, _across_attempts(report, obs, stale, across, broke=bool(every)), bool(untold)


def _connection_integrity(
    report: ConsumerReport, obs: Observation, number: int
) -> tuple[list[str], str]:
    """I1 on connection ``number``: where it breaks, or ('' when it holds) why it cannot be
    told. Past the window both sides are a count and a running hash (``ledger.py``): equal
    counts must have equal hashes, more accepted than sent is a breach, fewer must be the
    first ones sent."""
    assert obs.wire is not None
    on_wire = connection(obs.wire, number)
    injected = set(() if on_wire is None else on_wire.injected)
    accepted = [  # an event a fault injected is not the producer's: not judged against it
        (obs.as_sent(a.sha256, number), _shown(a.preview, a.sha256, a.size))
        for a in report.accepted
        if a.connection == number and a.sha256 not in injected
    ]
    sent = () if on_wire is None else on_wire.sent
    sent_past = Past() if on_wire is None else on_wire.sent_past
    tallied = accepted_past(report, number)
    past = Past() if tallied is None else Past(tallied.count, tallied.chain)
    held = _held_to(obs, number)  # what the producer sent, or received where none could see
    found = _subsequence_problems(accepted, held, obs.preview)
    got, had = len(accepted) + past.count, len(held) + sent_past.count
    if on_wire is not None and on_wire.over_limit and (found or got > had):
        return [], on_wire.over_limit  # what the consumer took past it was never decoded
    if got > had:
        more = f"accepted {got} messages, the producer sent {had}"
        return found or [more], ""
    if not past.count and not sent_past.count:
        return found, ""
    if not past.count:
        # the window's problems may be messages sent past it, after some the consumer skipped
        return [], f"{found[0]}, or sent past message {WINDOW}" if found else ""
    prefix = is_prefix([d for d, _ in accepted], past, sent, sent_past)
    if prefix:
        return [], ""
    if got == had:
        # as many as were sent, so the very messages sent: any other is a breach
        past_text = f"the {past.count} messages past message {WINDOW} are not those sent"
        return found or [past_text], ""
    return [], (
        f"{got} of {had} messages accepted, not the first {got} sent, past message {WINDOW}"
        " (a message skipped or changed there)"
    )


def _held_to(obs: Observation, number: int) -> tuple[str, ...]:
    """What I1 holds connection ``number``'s accepted messages to: what the producer sent,
    or, after a fault that repeated or swapped messages where no consumer can see it, what
    the consumer's side received (as sent, where a change in place went unseen too)."""
    assert obs.wire is not None
    on_wire = connection(obs.wire, number)
    if on_wire is None:
        return ()
    repeated = blind_fired(obs.declared, obs.timeline, number, "duplication")
    if not (repeated or blind_fired(obs.declared, obs.timeline, number, "reordering")):
        return on_wire.sent
    return tuple(obs.as_sent(digest, number) for digest in on_wire.received)


def _integrity_held(report: ConsumerReport, obs: Observation) -> Check:
    total = len(report.accepted) + sum(p.count for p in report.accepted_past)
    notes = [*obs.report_cuts]
    changed = sum(1 for a in report.accepted if obs.as_sent(a.sha256, a.connection) != a.sha256)
    if changed:
        notes.append(f"{changed} as the fault changed them, which no consumer can see")
    cut = f" ({'; '.join(notes)})" if notes else ""
    return Check("I1", True, f"{total} accepted messages all byte-identical and in order{cut}")


def _across_attempts(
    report: ConsumerReport, obs: Observation, stale: list[str], across: list[str], *, broke: bool
) -> Check:
    """I3 from the stale bytes after a reconnect and the result's problems across attempts
    (``broke``: I1 broke, on connection 1 alone)."""
    if stale or across:
        parts = [_listed(stale) + " (after a reconnect)"] if stale else []
        if across:
            parts.append(_listed(across))
        return Check("I3", False, "; ".join(parts))
    connections = consumer_connections(report, obs)
    if connections < 2:
        held = (
            "no reconnect involved"
            if broke
            else f"{connections} connection(s), no stale bytes accepted"
        )
        return Check("I3", True, held)
    mode = "continued" if obs.resumes else "restarted"
    return Check(
        "I3",
        True,
        f"{connections} connections ({mode} stream), no stale bytes accepted, the result "
        "held once each across attempts",
    )


def _handed(report: ConsumerReport, obs: Observation) -> list[Handed]:
    return [
        Handed(
            a.connection, obs.as_sent(a.sha256, a.connection), _shown(a.preview, a.sha256, a.size)
        )
        for a in report.accepted
    ]


def _attempts(report: ConsumerReport, obs: Observation) -> Attempts:
    altered = {
        r.connection
        for r in obs.timeline.faults
        if r.direction == "downstream" and not keeps_messages(r.name)
    }
    assert obs.wire is not None
    return Attempts(obs.wire, obs.resumes, consumer_connections(report, obs), frozenset(altered))


def consumer_connections(report: ConsumerReport, obs: Observation) -> int:
    """How many connections the consumer opened: what the proxy saw, whatever the report
    says (``connections`` is an optional field of the contract)."""
    seen = {e.connection for e in obs.timeline.ends} | {s.connection for s in obs.timeline.segments}
    used = {a.connection for a in report.accepted} | {p.connection for p in report.accepted_past}
    return max([len(report.connections), *seen, *used, 1])


def check_fail_closed(report: ConsumerReport, obs: Observation) -> Check:
    """I2: a complete result only when the consumer's side of the link got the producer's own
    end (``WireConnection.delivered_end``) and every message that carries the result."""
    return _fail_closed(report, obs)[0]


def _fail_closed(report: ConsumerReport, obs: Observation) -> tuple[Check, bool]:
    """I2, and whether it cannot be told (past the window: ``ledger.py``)."""
    if not report.complete:
        return Check("I2", True, "the consumer claimed no complete result"), False
    if obs.wire is None:
        return Check("I2", None, "not judged: the producer's stream was not observed"), False
    last = consumer_connections(report, obs)
    conn = connection(obs.wire, last)
    if conn is None:
        return Check(
            "I2", False, f"complete result, but connection {last} carried no stream"
        ), False
    if not conn.delivered_end:
        return Check("I2", False, f"complete result although {_why_no_end(conn, obs)}"), False
    chosen = [c for c in obs.wire if (c.number <= last if obs.resumes else c.number == last)]
    if report.accepted_past or any(c.sent_past.count for c in chosen):
        return _carried_past_window(report, obs, chosen)
    needed = needed_messages(obs.wire, last, resumes=obs.resumes)
    accepted = {obs.as_sent(a.sha256, a.connection) for a in report.accepted}
    removed = removed_unseen(obs.declared, obs.timeline, obs.wire, obs.as_sent)
    missing = [d for d in needed if d not in accepted and d not in removed]
    if missing:
        return Check(
            "I2",
            False,
            f"complete result but {len(missing)} of {len(needed)} messages that carry the "
            "result were never accepted",
        ), False
    unseen = sum(1 for d in needed if d not in accepted and d in removed)
    lost = f" ({unseen} lost where no consumer can see it: {UNDETECTABLE})" if unseen else ""
    held = f"complete result, and the producer's end reached the consumer{lost}"
    return Check("I2", True, held), False


def _carried_past_window(
    report: ConsumerReport, obs: Observation, chosen: Sequence[WireConnection]
) -> tuple[Check, bool]:
    """I2's "every message that carries the result" on a stream longer than the window: on
    each connection the consumer accepted at least as many messages as carry the result, and
    they are the first ones sent, up to the last that carries it."""
    for conn in chosen:
        listed = [obs.as_sent(a.sha256, a.connection) for a in report.accepted]
        mine = [
            d for d, a in zip(listed, report.accepted, strict=True) if a.connection == conn.number
        ]
        tallied = accepted_past(report, conn.number)
        past = Past() if tallied is None else Past(tallied.count, tallied.chain)
        got = len(mine) + past.count
        needed = len(conn.carrying) if conn.carrying_count is None else conn.carrying_count
        if got < needed:
            return Check(
                "I2",
                False,
                f"complete result but {needed - got} of {needed} messages that carry the result "
                f"on connection {conn.number} were never accepted",
            ), False
        prefix = is_prefix(mine, past, conn.sent, conn.sent_past)
        if prefix and got < conn.carrying_through:
            return Check(
                "I2",
                False,
                f"complete result but connection {conn.number}'s first {got} messages were "
                f"accepted, not the {conn.carrying_through} that hold the result",
            ), False
        if not prefix:
            return Check(
                "I2",
                None,
                f"cannot be told exactly: connection {conn.number}'s {got} accepted messages "
                f"are not the first ones sent past message {WINDOW}",
            ), True
    return Check("I2", True, "complete result, and the producer's end reached the consumer"), False


def _cuts(name: str) -> bool:
    """Whether the fault kind recorded as ``name`` ends a connection early (named when a
    complete claim follows one)."""
    cls = fault_class(name)
    return cls is not None and Effect.TRUNCATION in cls.effects


def _why_no_end(conn: WireConnection, obs: Observation) -> str:
    """Why connection ``conn`` did not deliver the producer's end, in words."""
    # (how many the producer sent by then depends on timing; what got through does not)
    got = f"the consumer's side got {conn.delivered} messages and no end"
    cuts = [
        r
        for r in obs.timeline.faults
        if r.connection == conn.number and r.direction == "downstream" and _cuts(r.name)
    ]
    if cuts:
        cut = cuts[0]
        return f"{cut.name} cut connection {conn.number} at byte {cut.offset}: {got}"
    if not conn.producer_end:
        return f"the producer never reached its own end on connection {conn.number}: {got}"
    return f"the faults on connection {conn.number} kept the producer's end from it: {got}"


def check_bounded(obs: Observation) -> Check:
    """I6: the producer held at most C_cap + 1 messages (the channel plus the one in hand)."""
    if obs.producer_max_held is None:
        unknown = "not judged: what a producer tearline did not write holds is not known"
        return Check("I6", None, unknown)
    bound = obs.channel_capacity + 1
    ok = obs.producer_max_held <= bound
    return Check(
        "I6", ok, f"producer held at most {obs.producer_max_held} messages (bound {bound})"
    )


def check_fidelity(obs: Observation) -> Check:
    """I5: every declared fault fired on its connection and direction (every one that did
    not is named); every split was seen."""
    unfired = [
        f"{fault.kind} ({fault.direction}, {_where(fault)}) never fired"
        + _why_unfired(obs.timeline, fault)
        for fault in obs.declared
        if not any(
            f.name == fault.kind
            and f.direction == fault.direction
            and fault.connection in (0, f.connection)
            for f in obs.timeline.faults
        )
    ]
    if unfired:
        return Check("I5", False, "; ".join(unfired))
    unseen = obs.timeline.fired("boundary-unobserved")
    if unseen:
        return Check("I5", False, f"{len(unseen)} read boundaries not observed by the consumer")
    return Check("I5", True, f"{len(obs.timeline.faults)} fault applications on the wire")


def _where(fault: DeclaredFault) -> str:
    if fault.exchange:
        return fault.exchange
    return "any connection" if fault.connection == 0 else f"connection {fault.connection}"


def _why_unfired(timeline: Timeline, fault: DeclaredFault) -> str:
    """Why a fault never fired, as the wire shows it: the stage said why (its position is
    not in the stream), or the leg ended before the fault's place came."""
    for record in timeline.fired("unreached"):
        mine = record.direction == fault.direction and fault.connection in (0, record.connection)
        if mine and record.detail.startswith(f"{fault.kind}: "):
            return f": {record.detail.removeprefix(f'{fault.kind}: ')}"
    if fault.exchange:
        return ""  # (whether that exchange came at all is the session's judge's to say)
    connection = fault.connection or 1
    end = timeline.end_of(connection, fault.direction)
    if end is None:
        return ""
    return f": the leg ended ({end.how}) after {end.written} bytes, before the fault's place"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One expectation the consumer did not meet: which key, and how, in words."""

    key: str  # "verdict" | "complete" | "accepted_messages"
    text: str


def missed_keys(report: ConsumerReport | None, expect: Expect) -> tuple[str, ...]:
    """The keys of ``expect`` the report did not meet (none without a report)."""
    if report is None:
        return ()
    return tuple(m.key for m in expectation_mismatches(report, expect))


def expectation_mismatches(report: ConsumerReport, expect: Expect) -> list[Mismatch]:
    found: list[Mismatch] = []
    got = {report.verdict, report.error_code} - {None}
    wanted = (expect.verdict,) if expect.verdict is not None else expect.any_of
    if wanted is not None and got.isdisjoint(wanted):
        also = report.error_code and report.error_code != report.verdict
        error = f" (error {report.error_code})" if also else ""
        found.append(
            Mismatch(
                "verdict", f"expected verdict {expected_label(expect)}, got {report.verdict}{error}"
            )
        )
    if expect.complete is not None and report.complete != expect.complete:
        text = f"expected complete={expect.complete}, got complete={report.complete}"
        found.append(Mismatch("complete", text))
    count, wanted_count = accepted_total(report), expect.accepted_messages
    if isinstance(wanted_count, CountRange):
        low, high = wanted_count.min, wanted_count.max
        if count < low or (high is not None and count > high):
            wanted_text = f"at least {low}" if high is None else f"{low}..{high}"
            text = f"expected {wanted_text} accepted messages, got {count}"
            found.append(Mismatch("accepted_messages", text))
    elif wanted_count is not None and count != wanted_count:
        text = f"expected {wanted_count} accepted messages, got {count}"
        found.append(Mismatch("accepted_messages", text))
    return found


def check_expectation(report: ConsumerReport, expect: Expect) -> Check:
    problems = expectation_mismatches(report, expect)
    if problems:
        return Check("expect", False, "; ".join(p.text for p in problems))
    count = accepted_total(report)
    return Check("expect", True, f"{report.verdict}, complete={report.complete}, {count} accepted")


def judge(expect: Expect, obs: Observation) -> Judgement:
    """The outcome and its evidence; for a foreign consumer also its grade."""
    notes = blind_notes(obs.declared, obs.timeline, obs.payload)
    verdict = replace(_judge(expect, obs), undetectable=notes)
    if not obs.foreign:
        return verdict
    missed = [] if obs.report is None else expectation_mismatches(obs.report, expect)
    keys = [m.key for m in missed]
    circumstances = Circumstances(obs.needs, obs.lacks)
    graded = grade(verdict.outcome, keys, expect, obs.report, circumstances)
    if graded is Grade.FAILED and (transported := as_transported(obs)) is not None:
        graded = transported_grade(_judge(expect, transported).outcome)
    return replace(verdict, grade=graded)


def as_transported(obs: Observation) -> Observation | None:
    """For a transport client, the observation judged against what the transport delivered:
    the messages a fault changed in place or added after the end, which only the payload's own
    checks refuse, taken as delivered (None: not a transport client, or no such change)."""
    if not obs.transport_client or obs.wire is None:
        return None
    if not any(c.payload_changed or c.payload_added for c in obs.wire):
        return None
    wire = tuple(
        replace(
            c,
            sent=(*c.sent, *c.payload_added),
            delivered_as=(*c.delivered_as, *c.payload_changed),
            payload_changed=(),
            payload_added=(),
        )
        for c in obs.wire
    )
    return replace(obs, wire=wire)


def _consumer_ended(report: ConsumerReport) -> str:
    """How the consumer ended, its own error included: what an inconclusive case still
    shows of the consumer."""
    error = (
        f", error {report.error_code}" if report.error_code not in (None, report.verdict) else ""
    )
    detail = f": {report.detail[:200]}" if report.detail else ""
    count = accepted_total(report)
    state = f"complete={report.complete}, {count} accepted{error}{detail}"
    return f"the consumer ended {report.verdict} ({state})"


def _judge(expect: Expect, obs: Observation) -> Judgement:
    if obs.harness_error:
        return Judgement(Outcome.ERROR, obs.harness_error)
    fidelity = check_fidelity(obs)
    if obs.report is None:
        why = obs.consumer_problem or "no report"
        return Judgement(
            Outcome.NO_VERDICT, f"I4: no verdict: {why}", (Check("I4", False, why), fidelity)
        )
    report = obs.report
    i1, i3, untold_i1 = _integrity(report, obs)
    i2, untold_i2 = _fail_closed(report, obs)
    checks = (
        i1,
        i2,
        i3,
        Check("I4", True, "verdict reached before the deadline"),
        fidelity,
        check_bounded(obs),
        check_expectation(report, expect),
    )
    if fidelity.ok is False:
        text = f"I5: {fidelity.evidence}; {_consumer_ended(report)}"
        return Judgement(Outcome.INCONCLUSIVE, text, checks)
    broken = [c for c in checks if c.name != "expect" and c.ok is False]
    if broken:
        return Judgement(
            Outcome.VIOLATION, "; ".join(f"{c.name}: {c.evidence}" for c in broken), checks
        )
    if untold_i1 or untold_i2:
        # never a pass on what cannot be told
        untold = [c for c in (i1, i2) if c.ok is None]
        text = "; ".join(f"{c.name}: {c.evidence}" for c in untold)
        return Judgement(Outcome.INCONCLUSIVE, text, checks)
    expectation = checks[-1]
    if expectation.ok is False:
        return Judgement(Outcome.FAIL, expectation.evidence, checks)
    return Judgement(Outcome.PASS, expectation.evidence, checks)
