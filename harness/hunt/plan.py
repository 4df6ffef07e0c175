"""A fault plan: what one hunted case does to a link, and the scenario it becomes. Pure.

A ``Plan`` is a link (framing, payload, the stream's size, the consumer settings the contract
conveys) and one to a few faults, as model objects (``harness.scenario.model``, the fault
classes of ``harness.faults``). ``scenario_of`` makes the ordinary scenario a plan is run and
written as; ``expect_from`` is the expectation the reference consumer's report meets (its
verdict, completeness and accepted count), so a written scenario passes against the reference
consumer and fails against the consumer the hunt caught.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

from harness.faults.config import Fault
from harness.faults.position import Position
from harness.scenario.model import (
    ConsumerConfig,
    CountRange,
    EnvelopeConfig,
    Expect,
    FramingConfig,
    Link,
    MessagesConfig,
    Scenario,
    TokensConfig,
)
from reference_impl.report import ConsumerReport, accepted_total

#: the scenario default deadline; a plan that cannot take long gets a shorter one
DEFAULT_DEADLINE_MS = 10000.0
#: a plan's deadline when nothing in it waits for the idle timeout
SHORT_DEADLINE_MS = 6000.0
#: what one more connection's stall without end adds: the idle timeout, and a margin
IDLE_WAIT_MS = 6000.0
#: what the reference run is judged against: anything (only the invariants can fail it)
ANYTHING = Expect(accepted_messages=CountRange(0))


@dataclass(frozen=True, slots=True)
class Plan:
    """One hunted case: a link and the faults injected into it, in order."""

    link: Link
    faults: tuple[Fault, ...]
    deadline_ms: float = SHORT_DEADLINE_MS

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.faults)


def is_timed(faults: tuple[Fault, ...]) -> bool:
    """Does any fault wait, or wait for a time (so the consumer's timeout matters)?"""
    return any(fault.waits() for fault in faults)


def reconnects(faults: tuple[Fault, ...]) -> int:
    """How many times the consumer is to reconnect."""
    return sum(fault.reconnects for fault in faults)


def deadline_for(faults: tuple[Fault, ...]) -> float:
    """Silence for good (a stall without end) is only ended by the consumer's idle timeout
    (5 s by default), on every connection it silences."""
    if not any(fault.silences() for fault in faults):
        return SHORT_DEADLINE_MS
    return DEFAULT_DEADLINE_MS + reconnects(faults) * IDLE_WAIT_MS


def resets(faults: tuple[Fault, ...]) -> bool:
    """Does a fault cut a connection with an RST?"""
    return any(getattr(f, "how", None) == "rst" for f in faults)


def expect_from(report: ConsumerReport, faults: tuple[Fault, ...] = ()) -> Expect:
    """What the reference consumer concluded, as an expectation. After an RST, the count is
    at most the reference's: a reset discards what the receiver had not read yet, so how many
    messages got through before it is a race between the proxy and the consumer's reads."""
    count = accepted_total(report)
    accepted: int | CountRange = CountRange(max=count) if resets(faults) else count
    return Expect(verdict=report.verdict, complete=report.complete, accepted_messages=accepted)


@dataclass(frozen=True, slots=True)
class Hunted:
    """The consumer a hunt is after: a program (``command``) or a Python function
    (``function``, ``module:function``), exactly one of them."""

    command: tuple[str, ...] | None = None
    function: str | None = None

    def __post_init__(self) -> None:
        assert (self.command is None) != (self.function is None), "a program or a function"

    @property
    def label(self) -> str:
        """How it is named to the user: the command line, or the function."""
        return shlex.join(self.command) if self.command is not None else str(self.function)

    @property
    def option(self) -> str:
        """The ``tearline run`` option that runs it."""
        if self.command is not None:
            return f"--consumer {shlex.quote(self.label)}"
        return f"--consumer-function {self.function}"


def with_consumer(link: Link, consumer: Hunted | None) -> Link:
    """The link run by ``consumer`` (None: the in-process reference consumer)."""
    command = None if consumer is None else consumer.command
    function = None if consumer is None else consumer.function
    chosen = dataclasses.replace(link.consumer, command=command, function=function)
    return dataclasses.replace(link, consumer=chosen)


def scenario_of(
    plan: Plan,
    expect: Expect,
    *,
    seed: int,
    name: str = "hunted",
    description: str = "A fault plan found by tearline hunt.",
    source: str | None = None,
    consumer: Hunted | None = None,
) -> Scenario:
    """The scenario that runs ``plan`` (with ``consumer``, None: the reference one) and
    expects ``expect``."""
    return Scenario(
        name=name,
        description=description,
        link=with_consumer(plan.link, consumer),
        expect=expect,
        source=source,
        faults=plan.faults,
        seed=seed,
        deadline_ms=plan.deadline_ms,
    )


def stream_text(link: Link) -> str:
    """The link in a few words: ``ndjson/messages 3x16B``."""
    config = link.payload_config
    if isinstance(config, MessagesConfig):
        if config.texts is not None:
            shown = repr(list(config.texts))
            size = f"texts {shown}" if len(shown) <= 40 else f"{len(config.texts)} texts"
        else:
            size = f"{config.message_count}x{config.message_bytes}B"
    elif isinstance(config, EnvelopeConfig):
        size = f"{config.records} records/{config.chunk_records}"
    else:
        assert isinstance(config, TokensConfig)
        size = f"{config.profile} {config.count} tokens"
        size += ", length" if config.advertise_length else ""
        size += ", no completion" if not config.send_completion else ""
    options = _changed(link.framing_options, FramingConfig())
    options += _changed(link.consumer, ConsumerConfig(), skip=("command",))
    extra = f" ({', '.join(options)})" if options else ""
    return f"{link.framing}/{link.payload} {size}{extra}"


def _changed(value: object, default: object, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        mine, theirs = getattr(value, f.name), getattr(default, f.name)
        if f.name not in skip and mine != theirs:
            out.append(f"{f.name}={_number(mine)}")
    return out


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def fault_text(fault: Fault) -> str:
    """One fault in a few words: ``kill fin at frame 3 + 2 B``."""
    words = [fault.kind]
    how = getattr(fault, "how", None)
    if isinstance(how, str):  # kill, reconnect (corrupt's how is a method)
        words.append(how)
    for f in dataclasses.fields(fault):  # type: ignore[arg-type]
        value = getattr(fault, f.name)
        if f.name in ("direction", "connection", "how") or value == f.default:
            continue
        if isinstance(value, Position):
            words.append(f"at {value.describe()}")
        elif value is None:
            words.append(f"{f.name}=none")
        elif isinstance(value, str) and not (value.isascii() and value.isprintable()):
            words.append(f"{f.name}={value!r}")
        else:
            words.append(f"{f.name}={_number(value)}")
    if fault.direction != "downstream":
        words.append(fault.direction)
    if fault.connection != 1:
        words.append("every connection" if fault.connection == 0 else f"conn {fault.connection}")
    return " ".join(words)


def describe(plan: Plan) -> str:
    """The plan in one line: ``ndjson/messages 1x16B: split at frame 1 + 3 B``."""
    faults = "; ".join(fault_text(f) for f in plan.faults) or "no fault"
    return f"{stream_text(plan.link)}: {faults}"
