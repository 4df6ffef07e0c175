"""When a replay writes what: the recorded schedule, scaled by the speed."""

from __future__ import annotations

import pytest

from harness.record.format import End, Read, Recording
from harness.record.schedule import Write, replay_plan
from tests.record.samples import META, sample

REQUEST = b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n"


def test_at_speed_1_the_writes_keep_the_recorded_delays_after_the_request() -> None:
    plan = replay_plan(sample(), 1.0)
    assert plan.request_bytes == len(REQUEST)
    # the request's last read was at 0.75 ms: the producer's reads came 1.25, 11.25, 41.25 ms later
    assert plan.writes == (
        Write(0.00125, b"HTTP/1.1 200 OK\r\n\r\n"),
        Write(0.01125, b"data: a\n\n"),
        Write(0.04125, b"data: b\n\n"),
    )
    assert (plan.end, plan.end_at_s) == ("eof", 0.04925)


@pytest.mark.parametrize("speed", [2.0, 0.5, 10.0])
def test_a_speed_divides_every_delay(speed: float) -> None:
    plain, scaled = replay_plan(sample(), 1.0), replay_plan(sample(), speed)
    assert [w.at_s for w in scaled.writes] == [w.at_s / speed for w in plain.writes]
    assert scaled.end_at_s == plain.end_at_s / speed
    assert [w.data for w in scaled.writes] == [w.data for w in plain.writes]


def test_speed_0_sends_everything_at_once() -> None:
    plan = replay_plan(sample(), 0)
    assert [w.at_s for w in plan.writes] == [0.0, 0.0, 0.0]
    assert plan.end_at_s == 0.0


def test_a_producer_that_speaks_first_waits_for_no_request() -> None:
    events = (
        Read(3.0, "producer", b"banner"),
        Read(4.0, "consumer", b"hello"),
        Read(9.0, "producer", b"reply"),
    )
    plan = replay_plan(Recording(META, events))
    assert plan.request_bytes == 0
    assert plan.writes == (Write(0.003, b"banner"), Write(0.009, b"reply"))
    assert (plan.end, plan.end_at_s) == (None, 0.009)  # never ended: stays open


def test_consumer_bytes_after_the_first_answer_are_not_part_of_the_request() -> None:
    events = (
        Read(1.0, "consumer", b"req"),
        Read(2.0, "producer", b"a"),
        Read(2.0, "consumer", b"window update"),
        Read(3.0, "producer", b"b"),
        End(4.0, "producer", "rst"),
    )
    plan = replay_plan(Recording(META, events))
    assert plan.request_bytes == 3
    assert (plan.end, plan.end_at_s) == ("rst", 0.003)


def test_a_negative_speed_is_refused() -> None:
    with pytest.raises(ValueError):
        replay_plan(sample(), -1)
