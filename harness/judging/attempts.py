"""The result across attempts (invariant I3): which messages make it up, and what breaks it. Pure.

A consumer that reconnects makes one attempt per connection. What its result is depends on the
producer, whoever it is (the judge reads only what the proxy decoded of each connection):

- ``restart``: every attempt starts the stream over, so the result is the last attempt's
  messages. A message handed on from an abandoned attempt belongs to the result only where the
  last attempt replayed it, at the same place: a consumer that skips the replayed prefix it had
  already handed on is right, one that keeps the abandoned attempt and appends the replay
  hands on every one of those messages twice.
- ``continue``: each attempt goes on where the producer resumed (after the cursor the consumer
  sent, SSE's ``Last-Event-ID``), so the result is the resumed sequence: attempt 1's messages up
  to where attempt 2 started, attempt 2's up to where attempt 3 started, and so on. Where a
  resumed attempt starts is found by its first message in the attempt before it (the producer
  resends the message after the cursor); a resumed stream that starts with a message the attempt
  before never carried continues after all of it.

Whatever the payload, the accepted messages, mapped to their places in the result, must come in
strictly increasing order: a message of an abandoned attempt that the result does not hold, or
one handed on twice, breaks that. And the result has no gap at a resume point: the producer
resumed past messages the consumer never handed on (its cursor was ahead of what it handed on,
or it dropped the first message of the resumed attempt), yet the consumer handed on what came
after them. A fault that removes or rewrites messages on the attempt concerned (``drop_frame``,
``corrupt``, ...) can make such a gap that no consumer sees, so a gap is claimed only on attempts
where every fault that fired keeps whole messages.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from harness.evidence.connection import WireConnection, connection
from harness.faults.effects import Effect
from harness.faults.registry import fault_class


def keeps_messages(name: str) -> bool:
    """Whether the fault recorded as ``name`` never removes, adds or rewrites a whole message
    inside the stream: it only splits, delays or ends it (a gap on an attempt such faults
    alone touched is the consumer's). Asked of the fault's declared effects."""
    cls = fault_class(name)
    return cls is not None and cls.effects <= {Effect.TRUNCATION}


@dataclass(frozen=True, slots=True)
class Handed:
    """One accepted message: the connection it came on, its digest as sent, how to show it."""

    connection: int
    digest: str
    shown: str


@dataclass(frozen=True, slots=True)
class Attempts:
    """What the judge knows of a consumer's attempts."""

    wire: Sequence[WireConnection]
    #: the producer continues the stream across reconnects (else it restarts it)
    resumes: bool
    #: the consumer's last attempt (the last connection it opened)
    last: int
    #: connections on which a fault fired that may remove or rewrite a whole message
    altered: Collection[int] = ()


def attempt_problems(handed: Sequence[Handed], attempts: Attempts) -> list[str]:
    """Every place the accepted messages break the result across attempts; none on a single
    attempt."""
    if attempts.last < 2 or not handed:
        return []
    if attempts.resumes:
        return _continued(handed, attempts)
    return _restarted(handed, attempts)


def _sent(attempts: Attempts, number: int) -> tuple[str, ...]:
    found = connection(attempts.wire, number)
    return () if found is None else found.sent


def _restarted(handed: Sequence[Handed], attempts: Attempts) -> list[str]:
    """Restart: the result is the last attempt's stream; each accepted message takes the next
    place of it that holds the same message."""
    result = _sent(attempts, attempts.last)
    problems: list[str] = []
    taken: dict[int, int] = {}  # place in the result -> index of the accepted message there
    cursor = 0
    prefix_end = -1  # the last place taken by a message of an abandoned attempt
    first_of_last: int | None = None
    own = _local_places(handed, attempts)
    for index, message in enumerate(handed):
        if own[index] is None:
            continue  # never sent on its connection (or out of its order): I1 says so
        place = _find(result, message.digest, cursor)
        if place is None:
            problems.append(_misplaced(index, message, handed, taken, result, attempts))
            continue
        taken[place] = index
        cursor = place + 1
        if message.connection < attempts.last:
            prefix_end = place
        elif first_of_last is None:
            first_of_last = place
    if not problems and first_of_last is not None and prefix_end >= 0:
        gap = _gap(prefix_end, first_of_last, attempts.last, attempts)
        if gap:
            problems.append(gap)
    return problems


def _misplaced(
    index: int,
    message: Handed,
    handed: Sequence[Handed],
    taken: dict[int, int],
    result: Sequence[str],
    attempts: Attempts,
) -> str:
    """Why accepted message ``index`` has no place in a restarted result."""
    what = f"accepted message {index + 1} {message.shown} (connection {message.connection})"
    for place, earlier in sorted(taken.items()):
        if result[place] == message.digest:
            before = handed[earlier]
            replayed = (
                f": the last attempt (connection {attempts.last}) replayed it"
                if before.connection < attempts.last
                else ""
            )
            return (
                f"{what} was already handed on as accepted message {earlier + 1} "
                f"(connection {before.connection}){replayed}, and the result holds it once"
            )
    if message.connection < attempts.last:
        return (
            f"{what} was handed on from an abandoned attempt: the producer restarted the stream "
            f"on connection {attempts.last}, whose messages are the result"
        )
    return f"{what} is out of order in the last attempt's stream"


def _continued(handed: Sequence[Handed], attempts: Attempts) -> list[str]:
    """Continue: attempt k+1's messages take the places after attempt k's resume point."""
    locals_ = _local_places(handed, attempts)
    offsets = _offsets(attempts, handed, locals_)
    problems: list[str] = []
    places: list[tuple[int, int]] = []  # (place in the result, index in ``handed``)
    for index, message in enumerate(handed):
        local = locals_[index]
        if local is None:
            continue  # never sent on its connection (or out of its order): I1 says so
        place = offsets[message.connection] + local
        if places and place <= places[-1][0]:
            earlier = next((i for p, i in places if p == place), None)
            problems.append(_repeated(index, message, earlier, handed))
            continue
        places.append((place, index))
    if not problems:
        problems += _resume_gaps(places, handed, offsets, attempts)
    return problems


def _local_places(handed: Sequence[Handed], attempts: Attempts) -> list[int | None]:
    """Each accepted message's index in its own connection's stream (None: not found there
    in order, which I1 reports)."""
    cursors: dict[int, int] = {}
    found: list[int | None] = []
    for message in handed:
        if message.connection > attempts.last:
            found.append(None)
            continue
        sent = _sent(attempts, message.connection)
        local = _find(sent, message.digest, cursors.get(message.connection, 0))
        if local is not None:
            cursors[message.connection] = local + 1
        found.append(local)
    return found


def _offsets(
    attempts: Attempts, handed: Sequence[Handed], locals_: Sequence[int | None]
) -> dict[int, int]:
    """The place in the result of each attempt's first message."""
    offsets = {1: 0}
    for number in range(1, attempts.last):
        sent, following = _sent(attempts, number), _sent(attempts, number + 1)
        # where a correct consumer's cursor puts the resume: right after its last message
        taken = [
            local
            for local, message in zip(locals_, handed, strict=True)
            if local is not None and message.connection == number
        ]
        expected = max(taken, default=-1) + 1
        offsets[number + 1] = offsets[number] + _resume_point(sent, following, expected)
    return offsets


def _taken(places: Sequence[tuple[int, int]], place: int) -> bool:
    return any(p == place for p, _ in places)


def _repeated(index: int, message: Handed, earlier: int | None, handed: Sequence[Handed]) -> str:
    what = f"accepted message {index + 1} {message.shown} (connection {message.connection})"
    if earlier is None:
        return f"{what} comes before a message it follows in the resumed stream"
    before = handed[earlier]
    return (
        f"{what} was already handed on as accepted message {earlier + 1} (connection "
        f"{before.connection}): the resumed stream holds it once"
    )


def _resume_gaps(
    places: Sequence[tuple[int, int]],
    handed: Sequence[Handed],
    offsets: dict[int, int],
    attempts: Attempts,
) -> list[str]:
    """Messages of the result between the last one handed on before a resume point and the
    first one after it that were never handed on: the producer resumed past them (the cursor
    was ahead of what was handed on), or the resumed attempt delivered them and the consumer
    dropped them."""
    problems = []
    for number in range(1, attempts.last):
        before = [p for p, i in places if handed[i].connection <= number]
        after = [p for p, i in places if handed[i].connection > number]
        if not after or {number, number + 1} & set(attempts.altered):
            continue
        last, following = max(before, default=-1), min(after)
        lost = following - last - 1
        if lost <= 0:
            continue
        resumed = offsets[number + 1]
        them = "it" if lost == 1 else "them"
        where = (
            f"the producer resumed connection {number + 1} past {them}"
            if resumed >= following
            else f"connection {number + 1} delivered {them}"
            if resumed <= last + 1
            else f"the producer resumed connection {number + 1} among them"
        )
        were = "was" if lost == 1 else "were"
        problems.append(
            f"the result has a gap at the resume point: {_places(last + 2, lost)} of the "
            f"stream {were} never handed on ({where}), and message {following + 1} was"
        )
    return problems


def _places(first: int, count: int) -> str:
    return f"message {first}" if count == 1 else f"messages {first} to {first + count - 1}"


def _gap(last_place: int, next_place: int, number: int, attempts: Attempts) -> str:
    """A restarted result's gap between the last place an abandoned attempt's message took
    (``last_place``) and the first the last attempt's took (``next_place``)."""
    lost = next_place - last_place - 1
    if lost <= 0 or number in attempts.altered:
        return ""
    return (
        f"the result has a gap: the consumer handed on the last attempt's stream from message "
        f"{next_place + 1}, skipping {_places(last_place + 2, lost)} (connection {number})"
    )


def _find(items: Sequence[str], digest: str, start: int) -> int | None:
    try:
        return items.index(digest, start)
    except ValueError:
        return None


def _resume_point(sent: Sequence[str], following: Sequence[str], expected: int) -> int:
    """Where in ``sent`` the resumed stream ``following`` starts: a place from which the two
    agree on every message both hold, the one nearest ``expected`` (a stream can repeat a
    message, a token's text say); after all of ``sent`` when there is none."""
    if not following:
        return len(sent)
    agreeing = [
        start
        for start in range(len(sent))
        if sent[start] == following[0]
        and all(a == b for a, b in zip(sent[start:], following, strict=False))
    ]
    if not agreeing:
        return len(sent)
    return min(agreeing, key=lambda start: (abs(start - expected), start))
