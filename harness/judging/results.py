"""The results model (pure): what one judged case is, for the console, every report and pytest.

``Outcome`` is the one spelling of a case's outcome; ``CaseResult`` carries the outcome, the
evidence (``Check``) and what the reports draw (the consumer's report, the wire timeline, the
clean stream's message spans). ``replay_command`` is the command that runs the same case again,
against the same consumer and producer.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from enum import StrEnum

from harness.evidence.timeline import Timeline
from harness.scenario.model import Expect
from reference_impl.report import ConsumerReport


class Outcome(StrEnum):
    """A case's outcome, in the order the judge decides them (see ``judge.py``)."""

    PASS = "pass"
    FAIL = "fail"
    VIOLATION = "violation"
    NO_VERDICT = "no_verdict"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"


OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)


class Grade(StrEnum):
    """How a consumer other than the reference one did on a case, after Autobahn's grades
    (``docs/grades.md``): the reference consumer is held to ``strict`` everywhere."""

    STRICT = "strict"  # the seed's exact verdict and counts
    NON_STRICT = "non-strict"  # every invariant held and the failure surfaced, another way
    FAILED = "failed"  # an invariant broke, or no verdict in time
    INFORMATIONAL = "informational"  # the case asks for what the contract cannot express


GRADES: tuple[Grade, ...] = tuple(Grade)


@dataclass(frozen=True, slots=True)
class Check:
    """One piece of evidence: an invariant ("I1".."I6") or the expectation ("expect")."""

    name: str
    ok: bool | None  # None: not judged for this case (``evidence`` says why)
    evidence: str


@dataclass(frozen=True, slots=True)
class Target:
    """Whose programs a case ran against: ``None`` is the reference consumer or producer."""

    consumer: tuple[str, ...] | None = None
    #: a Python consumer function, ``package.module:function``
    function: str | None = None
    upstream: str | None = None
    #: TLS on the consumer's side (and to the reference producer), ``link.tls``
    tls: bool = False
    #: with an https upstream: the CA file trusted, or verification off
    upstream_ca: str | None = None
    upstream_insecure: bool = False
    #: the link's request as ``tearline run``'s options (curl's), when it is not the plain
    #: default: a replay sends the same request whether a file or the command line said it
    request: tuple[str, ...] = ()

    @property
    def is_reference(self) -> bool:
        """The reference consumer (what the library's expectations are written for)."""
        return self.consumer is None and self.function is None


@dataclass(frozen=True, slots=True)
class CaseResult:
    case_id: str
    scenario: str
    file: str
    line: int
    seed: int
    outcome: Outcome
    diagnosis: str
    checks: tuple[Check, ...]
    framing: str
    payload: str
    fault_kinds: tuple[str, ...]
    expected: str
    params: tuple[tuple[str, object], ...]
    duration_s: float
    report: ConsumerReport | None
    timeline: Timeline = field(repr=False)
    #: bytes of the clean producer->consumer stream (None: an external producer)
    wire_bytes: int | None = None
    #: ``[start, end)`` of the first messages on that clean stream (for drawings)
    frames: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    target: Target = Target()
    #: the grade of a consumer other than the reference one (None: the reference consumer)
    grade: Grade | None = None
    #: the keys of the expectation the consumer's report did not meet (``verdict``,
    #: ``complete``, ``accepted_messages``): the reports draw only those red
    missed: tuple[str, ...] = ()
    #: the producer reached its own end on the connection ``wire_bytes`` counts: those are the
    #: whole stream it sent, not only what the proxy had read of it when the case ended
    wire_complete: bool = False
    #: the faults that fired and that no consumer of this protocol can see, each with why
    #: (``harness.link.blind``): the consumer was not held to them
    undetectable: tuple[str, ...] = ()
    #: seconds from the proxy's start (the timeline's zero) until the consumer started (a
    #: program: connected), which its deadline does not count; None: it never started
    startup_s: float | None = None

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS

    @property
    def ok(self) -> bool:
        """Not a failure for CI: a pass for the reference consumer; for another consumer, any
        grade but ``failed`` (a case that could not be run or proven is never ok)."""
        if self.target.is_reference:
            return self.passed
        return self.grade is not None and self.grade is not Grade.FAILED


def expected_label(expect: Expect) -> str:
    """The verdict part of an expectation: ``X`` or ``X | Y``."""
    if expect.verdict is not None:
        return expect.verdict
    return " | ".join(expect.any_of or ())


def expectation_text(expect: Expect) -> str:
    """An expectation in one line, as the reports show it: ``X, complete=False``."""
    if expect.session is not None:  # an MCP session's
        session = expect.session
        return f"session {session.error or session.outcome}"
    parts = [expected_label(expect)]
    if expect.complete is not None:
        parts.append(f"complete={expect.complete}")
    return ", ".join(p for p in parts if p)


def replay_command(result: CaseResult) -> str:
    """The command that runs exactly this case again: same file, id, seed and programs."""
    words = ["tearline", "run", result.file, "-k", result.case_id, "--seed", str(result.seed)]
    if result.target.consumer is not None:
        words += ["--consumer", shlex.join(result.target.consumer)]
    if result.target.function is not None:
        words += ["--consumer-function", result.target.function]
    if result.target.upstream is not None:
        words += ["--upstream", result.target.upstream]
        # without them the replay of an https upstream fails verification, or verifies
        # against another trust store than the run did
        if result.target.upstream_ca is not None:
            words += ["--upstream-ca", result.target.upstream_ca]
        if result.target.upstream_insecure:
            words.append("--upstream-insecure")
    if result.target.tls:
        words.append("--tls")
    words += result.target.request
    return shlex.join(words)
