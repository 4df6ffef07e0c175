"""The result across attempts (``harness/judging/attempts.py``, invariant I3), pure: for each
reconnect mode, which messages make up the result, and every way to break it, with the exact
diagnosis."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from harness.evidence.connection import WireConnection
from harness.judging.attempts import Attempts, Handed, attempt_problems


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


M = [digest(f"m{i}") for i in range(1, 6)]  # the stream: m1..m5


def wire(*streams: Sequence[str]) -> tuple[WireConnection, ...]:
    return tuple(WireConnection(n, tuple(s), tuple(s)) for n, s in enumerate(streams, start=1))


def handed(*pairs: tuple[int, int]) -> list[Handed]:
    """(connection, message number) pairs, in the order handed on."""
    return [Handed(c, M[n - 1], f"(m{n})") for c, n in pairs]


def restart(*pairs: tuple[int, int], altered: tuple[int, ...] = ()) -> list[str]:
    """Connection 1 carried m1..m3 before the cut; connection 2 restarted: m1..m5."""
    attempts = Attempts(wire(M[:3], M), resumes=False, last=2, altered=altered)
    return attempt_problems(handed(*pairs), attempts)


def resumed(*pairs: tuple[int, int], second: Sequence[str] = M[2:]) -> list[str]:
    """Connection 1 carried m1..m3 (m3 cut short for the consumer); connection 2 resumed."""
    attempts = Attempts(wire(M[:3], second), resumes=True, last=2)
    return attempt_problems(handed(*pairs), attempts)


# --- restart: the result is the last attempt's messages --------------------------------


def test_restart_the_last_attempt_alone_is_the_result() -> None:
    assert restart(*[(2, n) for n in range(1, 6)]) == []


def test_restart_skipping_the_replayed_prefix_is_right() -> None:
    """Streamed m1 and m2 can't be taken back: skipping them in the replay keeps the result."""
    assert restart((1, 1), (1, 2), (2, 3), (2, 4), (2, 5)) == []


def test_restart_keeping_the_abandoned_attempt_hands_every_replayed_message_twice() -> None:
    assert restart((1, 1), (1, 2), *[(2, n) for n in range(1, 6)]) == [
        "accepted message 3 (m1) (connection 2) was already handed on as accepted message 1 "
        "(connection 1): the last attempt (connection 2) replayed it, and the result holds it "
        "once",
        "accepted message 4 (m2) (connection 2) was already handed on as accepted message 2 "
        "(connection 1): the last attempt (connection 2) replayed it, and the result holds it "
        "once",
    ]


def test_restart_a_message_the_last_attempt_never_brought_is_from_an_abandoned_attempt() -> None:
    """A producer whose restart sends other messages (an answer generated again)."""
    attempts = Attempts(wire(M[:2], M[2:]), resumes=False, last=2)
    assert attempt_problems(handed((1, 1), (2, 3), (2, 4), (2, 5)), attempts) == [
        "accepted message 1 (m1) (connection 1) was handed on from an abandoned attempt: the "
        "producer restarted the stream on connection 2, whose messages are the result"
    ]


def test_restart_skipping_one_too_many_of_the_replay_is_a_gap() -> None:
    assert restart((1, 1), (1, 2), (2, 4), (2, 5)) == [
        "the result has a gap: the consumer handed on the last attempt's stream from message "
        "4, skipping message 3 (connection 2)"
    ]


def test_restart_no_gap_is_claimed_where_a_fault_removed_messages() -> None:
    assert restart((1, 1), (1, 2), (2, 4), (2, 5), altered=(2,)) == []


# --- continue: the result is the resumed sequence ---------------------------------------


def test_continue_the_resumed_sequence_once_is_the_result() -> None:
    assert resumed((1, 1), (1, 2), (2, 3), (2, 4), (2, 5)) == []


def test_continue_a_replayed_message_handed_on_again_is_a_duplicate() -> None:
    """The cursor named message 1, so the producer resent m2, and the consumer took it again."""
    assert resumed((1, 1), (1, 2), (2, 2), (2, 3), (2, 4), (2, 5), second=M[1:]) == [
        "accepted message 3 (m2) (connection 2) was already handed on as accepted message 2 "
        "(connection 1): the resumed stream holds it once"
    ]


def test_continue_a_replay_skipped_by_the_consumer_is_right() -> None:
    assert resumed((1, 1), (1, 2), (2, 3), (2, 4), (2, 5), second=M[1:]) == []


def test_continue_a_cursor_ahead_of_what_was_handed_on_is_a_gap() -> None:
    """The cursor named m3, whose event was cut short: the producer resumed at m4."""
    assert resumed((1, 1), (1, 2), (2, 4), (2, 5), second=M[3:]) == [
        "the result has a gap at the resume point: message 3 of the stream was never handed "
        "on (the producer resumed connection 2 past it), and message 4 was"
    ]


def test_continue_the_first_resumed_message_dropped_is_a_gap() -> None:
    assert resumed((1, 1), (1, 2), (2, 4), (2, 5)) == [
        "the result has a gap at the resume point: message 3 of the stream was never handed "
        "on (connection 2 delivered it), and message 4 was"
    ]


def test_continue_a_stream_that_repeats_a_message_is_aligned_where_it_resumed() -> None:
    """Tokens repeat ("the", "the"): the resumed stream starts at the place after the cursor,
    not at the first place that holds the same message."""
    stream = [M[0], M[1], M[0], M[1], M[2]]
    attempts = Attempts(wire(stream[:3], stream[2:]), resumes=True, last=2)
    accepted = [Handed(1, stream[0], "a"), Handed(1, stream[1], "b")]
    accepted += [Handed(2, d, "c") for d in stream[2:]]
    assert attempt_problems(accepted, attempts) == []


def test_continue_nothing_handed_on_after_the_resume_is_no_gap() -> None:
    """The resumed attempt failed at once: nothing after the lost message was handed on."""
    assert resumed((1, 1), (1, 2), second=M[3:]) == []


def test_a_single_attempt_has_no_result_across_attempts() -> None:
    attempts = Attempts(wire(M), resumes=False, last=1)
    assert attempt_problems(handed((1, 1), (1, 1)), attempts) == []
