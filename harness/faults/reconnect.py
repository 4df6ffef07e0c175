"""``reconnect``: cut the leg like ``kill``; the runner lets the consumer reconnect."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.hunted import Hunt
from harness.faults.items import CloseHow
from harness.faults.kill import Kill


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconnect(Kill):
    """Cut the consumer's connection at ``at`` like ``kill``; the runner then lets the consumer
    reconnect, and the stream goes on or restarts as the link's resume rules say. Place it on
    the connection it cuts with ``connection`` (1 = the first).

    - ``at``: where to cut: a byte position, or ``after_ms``.
    - ``how``: how the cut looks: ``fin`` (graceful close, the default), ``rst`` or ``half``.
    """

    kind: ClassVar[str] = "reconnect"
    reconnects: ClassVar[bool] = True
    hunt: ClassVar[Hunt | None] = Hunt(rank=8, weight=6)
    hunted_hows: ClassVar[tuple[CloseHow, ...]] = ("fin", "rst", "half", "fin")
    how: CloseHow = "fin"
