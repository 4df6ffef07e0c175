"""Which library cases a client adapter runs, and how a budget samples them (pure).

A case fits an adapter when its link is one the client speaks (framing, payload, token
profile), it runs against the reference producer (the matrix judges the client, not a
producer), and it asks nothing of the consumer that no client can be told: a checkpoint pause
(``pause_at_message``) or an unframed link (``unframed``). Everything else a scenario sets is
in the ``LinkInfo`` the adapter gets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import PurePath

from harness.consumers.catalogue import Adapter
from harness.scenario import Case, TokensConfig


def unsupported(case: Case) -> str:
    """'' or why no client can run ``case`` as written."""
    link = case.scenario.link
    if link.producer.upstream is not None:
        return "runs against an external producer"
    if link.consumer.pause_at_message is not None:
        return "pauses the consumer mid-stream (seed 000 checkpoint), which a client cannot"
    if link.consumer.unframed:
        return "declares the link unframed, which a client cannot be told"
    named = (f for f in case.scenario.faults if f.request is None)
    if link.payload == "mcp" and any(f.connection != 0 for f in named):
        # the connections are the client's own: a real SDK opens a GET stream of its own
        # beside the reference client's exchanges, at a moment of its choosing (a fault
        # that names a request is placed on the live session instead)
        return "places a fault by the reference client's connection numbers"
    return ""


def fits(adapter: Adapter, case: Case) -> bool:
    link = case.scenario.link
    if link.framing not in adapter.framings:
        return False
    if adapter.payloads is not None and link.payload not in adapter.payloads:
        return False
    if adapter.payloads is None and link.payload == "mcp":
        return False
    config = link.payload_config
    profile = config.profile if isinstance(config, TokensConfig) else None
    if adapter.profiles is not None and profile is not None and profile not in adapter.profiles:
        return False
    return not unsupported(case)


def family(case: Case) -> str:
    """The scenario family: the folder of the case's file (``seed001-envelope``)."""
    origin = case.scenario.origin
    if origin is None:
        return "-"
    parent = PurePath(origin.file).parent.name
    return parent or PurePath(origin.file).stem


def within_budget(cases: Sequence[Case], budget: int | None) -> list[Case]:
    """At most ``budget`` cases, taken in turn from each family (in case order within a
    family), so a small budget still covers every family; all of them without a budget."""
    if budget is None or len(cases) <= budget:
        return list(cases)
    by_family: dict[str, list[Case]] = {}
    for case in cases:
        by_family.setdefault(family(case), []).append(case)
    queues = [list(reversed(group)) for group in by_family.values()]
    picked: list[Case] = []
    while len(picked) < budget:
        for queue in queues:
            if queue and len(picked) < budget:
                picked.append(queue.pop())
    order = {id(case): index for index, case in enumerate(cases)}
    return sorted(picked, key=lambda case: order[id(case)])


def for_function(case: Case, function: str) -> Case:
    """``case`` with the consumer function ``function`` instead of its consumer."""
    link = case.scenario.link
    consumer = dataclasses.replace(link.consumer, command=None, function=function)
    scenario = dataclasses.replace(case.scenario, link=dataclasses.replace(link, consumer=consumer))
    return dataclasses.replace(case, scenario=scenario)
