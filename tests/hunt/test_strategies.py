"""Plans as the strategies draw them: always valid scenarios that every fault of can happen,
aimed at the stream's landmarks, with the settings their faults need. Pure."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.faults import BogusLength, Corrupt, Reconnect, Split
from harness.faults.position import Position
from harness.hunt.landmarks import landmarks, multibyte_chars
from harness.hunt.plan import ANYTHING, Plan, is_timed, scenario_of
from harness.hunt.scenario_file import dump
from harness.hunt.visible import undetectable
from harness.link.locator import PreparedLocator, check_positions, utf8_char_offset
from harness.link.prepared import PreparedLink, prepare
from harness.link.reference import link_spec, prepared_link
from harness.scenario import EnvelopeConfig, FramingConfig, Link, MessagesConfig, expand, load_text
from harness.search.strategies import (
    Space,
    clean_link,
    has_length_prefix,
    kind_choices,
    plans,
    plausible,
)
from tests.hunt.fakes import space
from tests.wire import examples

SPACES = [
    space("ndjson", "messages"),
    space("length-prefixed", "envelope"),
    space("sse", "tokens", profile="anthropic"),
    space("websocket", "messages"),
    space("grpc", "envelope", max_faults=2),
]


@pytest.mark.parametrize("where", SPACES, ids=lambda s: f"{s.framing}-{s.payload}")
@examples(40)
@given(data=st.data())
def test_every_plan_is_a_scenario_whose_faults_can_all_happen(
    where: Space, data: st.DataObject
) -> None:
    plan = data.draw(plans(where))
    assert 1 <= len(plan.faults) <= where.max_faults
    prepared = prepare(link_spec(plan.link))
    locator = PreparedLocator(prepared)
    assert check_positions(plan.faults, locator) is None
    assert plausible(plan.faults, locator)
    assert not undetectable(prepared, plan.faults)
    consumer = plan.link.consumer
    assert consumer.max_reconnects == sum(isinstance(f, Reconnect) for f in plan.faults)
    timed = is_timed(plan.faults)
    assert consumer.incomplete_message_timeout_ms == (where.timeout_ms if timed else 1000.0)
    scenario = scenario_of(plan, ANYTHING, seed=5)
    (case,) = expand(scenario, prepared_link)
    assert case.seed == 5
    # and it is written as a file that loads back as the same scenario
    (loaded,) = load_text(dump([scenario]), "hunted.yaml")
    assert dataclasses.replace(loaded, origin=None) == scenario


def test_bogus_length_only_where_frames_have_a_length_prefix() -> None:
    assert has_length_prefix("length-prefixed") and has_length_prefix("grpc")
    assert not any(has_length_prefix(f) for f in ("ndjson", "sse", "websocket"))
    assert "bogus_length" not in kind_choices(space("ndjson", "messages"))
    assert "bogus_length" in kind_choices(space("grpc", "messages"))


def test_frame_order_faults_only_where_the_payload_numbers_its_messages() -> None:
    for payload in ("messages", "tokens"):
        assert "duplicate_frame" not in kind_choices(space("ndjson", payload))
    assert "duplicate_frame" in kind_choices(space("ndjson", "envelope"))


@examples(30)
@given(plans(space("length-prefixed", "messages")))
def test_a_bogus_length_fits_the_prefix(plan: Plan) -> None:
    for fault in plan.faults:
        if isinstance(fault, BogusLength):
            assert fault.length < 2**32


def test_the_landmarks_of_a_stream() -> None:
    link = clean_link(space("ndjson", "messages"))
    prepared = prepare(link_spec(link))
    marks = landmarks(prepared)
    assert len(marks.frames) == 3
    for frame in marks.frames:
        assert (frame.head, frame.tail) == (0, 1)  # the message, then its LF
        assert frame.length == frame.size + 1
    assert marks.gaps[-1] == (marks.stream_length, marks.stream_length)  # the very end
    assert marks.request_length == 0
    prefixed = landmarks(prepare(link_spec(clean_link(space("length-prefixed", "messages")))))
    assert all((f.head, f.tail) == (4, 0) for f in prefixed.frames)


def test_multibyte_characters_are_counted_as_utf8_char_positions_count_them() -> None:
    wire = prepare(link_spec(clean_link(space("sse", "tokens")))).wire
    chars = multibyte_chars(wire)
    assert chars
    for number, (offset, width) in enumerate(chars, 1):
        assert utf8_char_offset(wire, number, 1) == offset + 1
        assert wire[offset : offset + width].decode()


def prepared(framing: str, payload: str, **settings: object) -> PreparedLink:
    return prepare(link_spec(Link(framing=framing, payload=payload, **settings)))  # type: ignore[arg-type]


SSE4 = {
    "messages": MessagesConfig(count=4, size_bytes=71),
    "framing_options": FramingConfig(sse_body="close"),
}


def test_a_rewrite_no_consumer_can_detect_is_not_drawn() -> None:
    """Regression: the hunt drew plans on which the reference consumer broke I1, as any
    consumer would (``/tmp/bench_hunt3.log``): the blank line ending SSE event 2 turned into
    LF VT by a mask of 1 fuses events 2 and 3 into one well-formed event; a length prefix of 0
    on the only frame is an empty message (then a truncated prefix); an ndjson line's LF
    turned into VT fuses two lines the opaque payload cannot tell from one."""
    sse = prepared("sse", "messages", **SSE4)
    fused = Corrupt(at=Position(frame=2, frame_offset=84), count_bytes=3, mask=1)
    assert undetectable(sse, [fused])
    lone = prepared("length-prefixed", "messages", messages=MessagesConfig(texts=("\\",)))
    assert undetectable(lone, [BogusLength(frame=1, length=0)])
    ndjson = prepared("ndjson", "messages", messages=MessagesConfig(count=2, size_bytes=16))
    assert undetectable(ndjson, [Corrupt(at=Position(frame=1, frame_offset=17), mask=1)])


def test_a_rewrite_a_consumer_can_detect_or_the_judge_forgives_is_drawn() -> None:
    sse = prepared("sse", "messages", **SSE4)
    # a byte of the text flipped in place: same size, same place, which the judge forgives
    assert not undetectable(sse, [Corrupt(at=Position(frame=2, frame_offset=20), mask=1)])
    assert not undetectable(sse, [Split(at=Position(frame=2))])  # no rewrite at all
    lone = prepared("length-prefixed", "messages", messages=MessagesConfig(texts=("\\",)))
    for length in (2, 2**31):  # past the stream's end (truncated), past the limit
        assert not undetectable(lone, [BogusLength(frame=1, length=length)])
    envelope = prepared("length-prefixed", "envelope", envelope=EnvelopeConfig(records=2))
    # the envelope checks what it carries: a re-framed stream is refused, nothing handed on
    assert not undetectable(envelope, [BogusLength(frame=2, length=3)])
    # a reconnect's second connection is the stream again, rewritten only if the fault says so
    fused = Corrupt(at=Position(frame=2, frame_offset=84), count_bytes=3, mask=1, connection=2)
    assert undetectable(sse, [Reconnect(at=Position(frame=4)), fused])
