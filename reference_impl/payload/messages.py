"""The ``messages`` payload: opaque application messages, one per framed message.

The producer side makes deterministic messages that every framing can carry (a compact JSON object
with UTF-8 text, multi-byte characters included, so cuts inside a character are exercised; no CR
or LF so the line framings need no escaping). The consumer side accepts each whole message as it
comes: there is nothing to verify inside an opaque message, so the verdict of this payload is the
framing verdict of seed 000.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from reference_impl.events import Message

# Characters of 1, 2, 3 and 4 UTF-8 bytes, so every message holds multi-byte characters.
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 éüñ€漢字🚀🙂"


@dataclass(frozen=True, slots=True)
class MessagesSpec:
    """``texts`` (exact messages) wins over ``count``/``size_bytes`` (generated ones)."""

    count: int = 5
    size_bytes: int = 64
    texts: tuple[str, ...] | None = None
    seed: int = 0


def _filler(rng: random.Random, size_bytes: int) -> str:
    """UTF-8 text of exactly ``size_bytes`` bytes (pads with ASCII when a wide char won't fit)."""
    out: list[str] = []
    used = 0
    while used < size_bytes:
        ch = rng.choice(_ALPHABET)
        width = len(ch.encode())
        if used + width > size_bytes:
            ch, width = "x", 1
        out.append(ch)
        used += width
    return "".join(out)


def message_bytes(spec: MessagesSpec, index: int) -> bytes:
    """The ``index``-th message (1-based) of a generated stream, about ``size_bytes`` long."""
    rng = random.Random(f"{spec.seed}:{index}")
    envelope_bytes = len(json.dumps({"n": index, "text": ""}, separators=(",", ":")))
    text = _filler(rng, max(0, spec.size_bytes - envelope_bytes))
    return json.dumps(
        {"n": index, "text": text}, ensure_ascii=False, separators=(",", ":")
    ).encode()


def iter_messages(spec: MessagesSpec) -> Iterator[Message]:
    """Every message of the stream, lazily."""
    if spec.texts is not None:
        for text in spec.texts:
            yield Message(text.encode())
        return
    for index in range(1, spec.count + 1):
        yield Message(message_bytes(spec, index))


def all_messages(spec: MessagesSpec) -> Sequence[bytes]:
    return [m.data for m in iter_messages(spec)]
