"""The replay producer: the recorded bytes, on the recorded schedule, ended as recorded.

Timing runs on trio's virtual clock (``autojump_clock``) over in-memory streams, so every time
below is exact: no wall clock is read."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from harness.record.format import End, Read, Recording
from harness.record.schedule import replay_plan
from harness.running.replay import REQUEST_IDLE_S, ReplayProducer
from tests.record.samples import META, sample

REQUEST = b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n"


async def _receive_all(stream: trio.abc.ReceiveStream) -> list[tuple[float, bytes]]:
    """(virtual time, bytes) of every receive until EOF."""
    got: list[tuple[float, bytes]] = []
    while data := await stream.receive_some(65536):
        got.append((trio.current_time(), bytes(data)))
    return got


async def _exchange(
    replay: ReplayProducer, request: bytes, send_at: float = 0.0
) -> tuple[float, list[tuple[float, bytes]]]:
    """Send ``request`` at virtual time ``send_at``; (when it was sent, what came back)."""
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(replay.play, server)
        await trio.sleep_until(send_at)
        sent = trio.current_time()
        await client.send_all(request)
        got = await _receive_all(client)
        await client.aclose()  # the consumer closes after the producer's FIN
    return sent, got


@pytest.mark.parametrize("speed", [1.0, 2.0, 0.25])
async def test_the_writes_follow_the_recorded_schedule_scaled(
    autojump_clock: trio.testing.MockClock, speed: float
) -> None:
    replay = ReplayProducer(sample(), speed)
    sent, got = await _exchange(replay, REQUEST)
    plan = replay_plan(sample(), speed)
    assert [data for _, data in got] == [w.data for w in plan.writes]
    assert [t - sent for t, _ in got] == pytest.approx([w.at_s for w in plan.writes], abs=1e-9)
    assert replay.writes == [pytest.approx([w.at_s for w in plan.writes], abs=1e-9)]


async def test_nothing_is_written_before_the_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """No idle limit before the consumer's first byte: a program may be slow to start."""
    replay = ReplayProducer(sample())
    sent, got = await _exchange(replay, REQUEST, send_at=5.0)
    assert sent == 5.0
    assert got[0][0] - sent == pytest.approx(replay.plan.writes[0].at_s, abs=1e-9)


async def test_a_shorter_request_counts_as_complete_after_the_idle_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    replay = ReplayProducer(sample())
    sent, got = await _exchange(replay, b"GET / HTTP/1.1\r\n\r\n")
    first = replay.plan.writes[0].at_s
    assert got[0][0] - sent == pytest.approx(REQUEST_IDLE_S + first, abs=1e-9)
    assert b"".join(d for _, d in got) == sample().sent("producer")


async def test_a_producer_left_open_waits_for_the_consumer_to_close(
    autojump_clock: trio.testing.MockClock,
) -> None:
    recording = Recording(META, (Read(0.0, "consumer", b"hi"), Read(1.0, "producer", b"yo")))
    replay = ReplayProducer(recording)
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(replay.play, server)
        await client.send_all(b"hi")
        assert await client.receive_some(10) == b"yo"
        with trio.move_on_after(60) as scope:
            await client.receive_some(10)  # no FIN: the recorded producer never ended
        assert scope.cancelled_caught
        await client.aclose()
    assert replay.connections == 1


async def test_a_recorded_rst_is_an_rst_and_every_connection_replays_the_same() -> None:
    events = (
        Read(0.0, "consumer", b"ask"),
        Read(1.0, "producer", b"part"),
        End(2.0, "producer", "rst"),
    )
    replay = ReplayProducer(Recording(META, events), speed=0)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(replay.serve, "127.0.0.1", 0)
        for _ in range(2):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(b"ask")
            got = b""
            with pytest.raises(trio.BrokenResourceError):  # ECONNRESET
                while data := await stream.receive_some(100):
                    got += data
            assert got == b"part"
            await stream.aclose()
        nursery.cancel_scope.cancel()
    assert replay.connections == 2
