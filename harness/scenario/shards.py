"""Which shard of a run each case belongs to (``tearline run --shard K/N``).

Every shard computes the same split with no coordination. By default a case's shard is the
SHA-256 of its id modulo N (as the pytest plugin's ``--tearline-shard``): adding a case moves no
other. Given the durations of a previous run, the shards are balanced by time instead: the
longest case first, each to the shard with the least time so far (the longest-processing-time
rule, within 4/3 of the best split), a case the previous run did not have counted at the mean
of those it had; every shard must be given the same durations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence


class ShardError(ValueError):
    """A shard option that is not ``K/N`` with ``1 <= K <= N``."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` as (2, 4)."""
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise ShardError(f"expected K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def shard_of(case_id: str, shards: int) -> int:
    """0-based shard of a case by a hash of its id, so every machine agrees."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def assign(
    case_ids: Sequence[str], shards: int, durations: Mapping[str, float] | None = None
) -> list[int]:
    """Each case's 0-based shard: by hash, or balanced by ``durations`` (seconds by case id)."""
    known = [durations[c] for c in case_ids if durations and c in durations]
    if not known or durations is None:
        return [shard_of(c, shards) for c in case_ids]
    mean = sum(known) / len(known)
    cost = [durations.get(c, mean) for c in case_ids]
    order = sorted(range(len(case_ids)), key=lambda i: (-cost[i], case_ids[i]))
    loads = [0.0] * shards
    out = [0] * len(case_ids)
    for i in order:
        target = min(range(shards), key=lambda s: (loads[s], s))
        out[i] = target
        loads[target] += cost[i]
    return out
