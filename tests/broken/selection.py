"""Which library cases the detection-power test runs, and against which consumer.

1. **The consumer honours the case's settings.** The contract tells a consumer program every
   setting of the case (``harness/running/external.py``: ``contract_values``), but a broken
   consumer is a small program that honours only some of them (``catalogue.HONOURED``, plus its
   module's ``HONOURS``: the reconnecting ones honour ``max_reconnects``). A case that sets any
   other consumer setting away from its default (``read_bytes``, ``pause_at_message``,
   ``unframed``, ``framing_options.max_message_bytes`` ...) is not asked of it: failing there
   would be a second bug, not the one under test. The link's request (``link.request``, the
   contract's ``{request_file}``) counts as a setting: the consumers that read through
   ``framed.FramedReader`` make it, the others send the framing's default. The reference
   program honours them all.
2. **The consumer speaks the link**: a consumer runs the cases over its framings and payloads,
   as a team runs ``tearline run --framing ... --payload ...`` for its own program.
3. **One case per scenario**: a sweep over framings, offsets or seeds multiplies the runtime
   more than the kinds of bugs it catches. The case rotates through the sweep from one scenario
   to the next (the n-th scenario takes the n-th of the framings the consumer speaks, and its
   n-th case over that framing), so all framings get their turn; and consumers that speak the
   same framings run the same cases, so the reference consumer, which must pass them all, has
   fewer to run. A consumer that speaks more than ``MAX_PER_CONSUMER`` scenarios gets one per
   scenario file instead (a file is one topic: a fault and its variants), its first there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import fields

from harness.scenario import Case, ConsumerConfig, FramingConfig
from harness.scenario.model import RequestConfig

MAX_PER_CONSUMER = 50
_DEFAULT_CONSUMER = ConsumerConfig()
_DEFAULT_MAX_MESSAGE = FramingConfig().max_message_bytes
#: consumer settings that are the program itself, not what it is told
_PROGRAM = ("command", "function")
#: every setting the reference program honours (the whole contract)
EVERY_SETTING = frozenset(
    {f.name for f in fields(ConsumerConfig) if f.name not in _PROGRAM}
    | {"max_message_bytes", "request"}
)


def honours_the_case(case: Case, honours: Collection[str]) -> bool:
    """Rule 1: every consumer setting of the case away from its default is one the consumer
    honours."""
    link = case.scenario.link
    sized = link.framing_options.max_message_bytes != _DEFAULT_MAX_MESSAGE
    if sized and "max_message_bytes" not in honours:
        return False
    if link.request != RequestConfig() and "request" not in honours:
        return False
    return all(
        getattr(link.consumer, f.name) == getattr(_DEFAULT_CONSUMER, f.name)
        for f in fields(ConsumerConfig)
        if f.name not in _PROGRAM and f.name not in honours
    )


def scenario_key(case: Case) -> str:
    """The scenario a case comes from: its id without the sweep values."""
    return case.case_id.split("[", 1)[0]


def _pick(group: list[Case], turn: int) -> Case:
    """The ``turn``-th framing of those in ``group`` (in sweep order), and the ``turn``-th case
    over that framing."""
    framings = list(dict.fromkeys(c.scenario.link.framing for c in group))
    framing = framings[turn % len(framings)]
    over = [c for c in group if c.scenario.link.framing == framing]
    return over[turn % len(over)]


def file_of(key: str) -> str:
    """The scenario file of a scenario key (the file name without its extension)."""
    return key.split("::", 1)[0]


def cases_for(
    cases: Iterable[Case],
    speaks: Callable[[str, str], bool],
    honours: Collection[str] = EVERY_SETTING,
) -> list[Case]:
    """Rules 1 to 3 for one consumer: one case per scenario it speaks, or one per scenario file
    (its first scenario there) when that would be more than ``MAX_PER_CONSUMER``."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        if honours_the_case(case, honours):
            groups.setdefault(scenario_key(case), []).append(case)
    mine: dict[str, Case] = {}
    for turn, (key, group) in enumerate(groups.items()):
        spoken = [c for c in group if speaks(c.scenario.link.framing, c.scenario.link.payload)]
        if spoken:
            mine[key] = _pick(spoken, turn)
    if len(mine) <= MAX_PER_CONSUMER:
        return list(mine.values())
    per_file: dict[str, Case] = {}
    for key, case in mine.items():
        per_file.setdefault(file_of(key), case)
    return list(per_file.values())
