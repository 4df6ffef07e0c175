"""Message digests in bounded memory, exact at any length: what the judge needs per message.

A stream's messages are kept as a window and a tally: the digests of the first ``WINDOW``
messages as a list (the judge names each one that breaks a rule), and past the window how
many more came with a running SHA-256 over their digests in order (as the envelope payload
keeps its records' checksum). The side that sent the messages (the producer's stream, decoded
by the proxy) also keeps the running hash after each of its last ``RECENT`` messages, so that
the consumer's first n messages past the window can be compared with the producer's first n
(a stream cut short: the consumer got a prefix of what was sent).

Two tallies of equal count and hash hold the same messages in the same order; a tally longer
than another's holds something the other has not. Only a consumer that accepted fewer messages
past the window than were sent, and not the first of them, cannot be judged exactly (it
skipped one, or changed one, past the window): the judge says so, never guesses.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass

#: digests kept as a list per connection (each side): the judge lists problems among them
WINDOW = 100_000
#: running hashes kept after the last messages past the window (the producer's side)
RECENT = 65_536


@dataclass(frozen=True, slots=True)
class Past:
    """The messages of one side past the window: how many, their running hash, and (the
    producer's side) the running hash after each of the last of them, oldest first."""

    count: int = 0
    chain: str = hashlib.sha256().hexdigest()
    recent: tuple[bytes, ...] = ()

    def chain_at(self, count: int) -> str | None:
        """The running hash after the first ``count`` messages past the window (None: not
        kept, more than ``RECENT`` before the last)."""
        if count == 0:
            return hashlib.sha256().hexdigest()
        if count == self.count:
            return self.chain
        index = count - (self.count - len(self.recent)) - 1
        if 0 <= index < len(self.recent):
            return self.recent[index].hex()
        return None


class Ledger:
    """A side's digests as they come: the window, then the tally (see the module docstring).
    ``recent``: keep the running hash after each of the last ``RECENT`` messages too."""

    __slots__ = ("_chain", "_recent", "count", "window")

    def __init__(self, *, recent: bool = False) -> None:
        self.window: list[str] = []
        self.count = 0
        self._chain = hashlib.sha256()
        self._recent: deque[bytes] | None = deque(maxlen=RECENT) if recent else None

    def add(self, digest_hex: str) -> None:
        self.count += 1
        if len(self.window) < WINDOW:
            self.window.append(digest_hex)
            return
        self._chain.update(bytes.fromhex(digest_hex))
        if self._recent is not None:
            self._recent.append(self._chain.digest())

    def __len__(self) -> int:
        return self.count

    def clear(self) -> None:
        self.window.clear()
        self.count = 0
        self._chain = hashlib.sha256()
        if self._recent is not None:
            self._recent.clear()

    @property
    def past(self) -> Past:
        recent = () if self._recent is None else tuple(self._recent)
        return Past(self.count - len(self.window), self._chain.hexdigest(), recent)


def is_prefix(
    window: list[str] | tuple[str, ...], past: Past, of_window: tuple[str, ...], of_past: Past
) -> bool | None:
    """Whether the messages ``window`` then ``past`` are the first ones of ``of_window`` then
    ``of_past`` (None: cannot be told: the running hash at that count was not kept)."""
    if past.count == 0:
        return len(window) <= len(of_window) and tuple(window) == of_window[: len(window)]
    if tuple(window) != of_window or past.count > of_past.count:
        return False
    at = of_past.chain_at(past.count)
    return None if at is None else at == past.chain
