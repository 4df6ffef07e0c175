"""Faults a link's protocol cannot show any consumer, from the payload's declaration. Pure.

The payload declares what its consumer can see (``reference_impl.payload.detection``); a fault
declares what it does (``effects``). A downstream fault with an effect the payload cannot see
is *blind* on that link: ``tearline validate`` says so, and the judge does not hold the
consumer to it (``harness.judging.judge``: I1 reads what the consumer's side received, I2 does
not ask for the messages it removed, the expected count moves by what it removed or repeated).

Only the effects on whole messages are decided here. Whether a changed byte is seen depends on
where it lands (in a token's text or in its JSON), so ``corrupt`` keeps its check on the bytes
themselves (``harness.link.unseen``).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.faults.config import Fault
from harness.faults.effects import MESSAGE_ORDER
from reference_impl.link.spec import LinkSpec
from reference_impl.payload.detection import Detection, detection

UNDETECTABLE = "undetectable by this protocol"


def declared(spec: LinkSpec) -> Detection:
    return detection(spec.payload, spec.tokens)


def blind_effects(spec: LinkSpec, fault: Fault) -> tuple[tuple[str, str], ...]:
    """``(effect, why)`` for each effect of ``fault`` on whole messages that no consumer of
    ``spec``'s payload can see (empty: the fault is judged in full)."""
    if fault.direction != "downstream":
        return ()
    found = declared(spec)
    return tuple(
        (effect.value, why)
        for effect in sorted(fault.effects & MESSAGE_ORDER)
        if (why := found.why_unseen(effect)) is not None
    )


def blind_note(kind: str, payload: str, effects: Sequence[tuple[str, str]]) -> str:
    """How the report names a blind fault: ``drop_frame: undetectable by this protocol
    (messages: loss: nothing numbers the messages)``."""
    why = "; ".join(f"{effect}: {reason}" for effect, reason in effects)
    return f"{kind}: {UNDETECTABLE} ({payload}: {why})"


def blind_warnings(cases: Sequence[tuple[str, int, LinkSpec, Sequence[Fault]]]) -> list[str]:
    """One ``file:line: warning: faults[i]: ...`` per scenario and blind fault, for the author
    (``tearline validate`` and ``run``); cases are ``(file, line, spec, faults)``."""
    seen: dict[str, None] = {}
    for file, line, spec, faults in cases:
        name = declared(spec).name
        for index, fault in enumerate(faults):
            for effect, why in blind_effects(spec, fault):
                text = (
                    f"{file}:{line}: warning: faults[{index}]: {fault.kind} ({effect}) is "
                    f"{UNDETECTABLE}: the {name} payload cannot show it to any consumer "
                    f"({why}); the consumer is not held to it"
                )
                seen[text] = None
    return list(seen)
