"""ItemReader and the forwarding helpers: positions, push-back, Close, deadlines."""

from __future__ import annotations

import trio
import trio.testing

from harness.faults.base import Boundary, Chunk, Close, Heartbeat, Item
from harness.faults.reader import ItemReader, forward_until, forward_until_time


async def _reader_of(items: list[Item]) -> ItemReader:
    tx, rx = trio.open_memory_channel[Item](len(items) + 1)
    async with tx:
        for item in items:
            tx.send_nowait(item)
    return ItemReader(rx)


async def _all(reader: ItemReader, offset: int | None = None) -> list[Item]:
    items: list[Item] = []
    while (item := await reader.next_before(offset)) is not None:
        items.append(item)
    return items


async def test_next_before_cuts_the_straddling_chunk_and_keeps_the_tail() -> None:
    reader = await _reader_of([Chunk(b"abc", 0), Heartbeat(b"p"), Chunk(b"defg", 3)])
    assert await _all(reader, 5) == [Chunk(b"abc", 0), Heartbeat(b"p"), Chunk(b"de", 3)]
    assert (reader.position, reader.finished) == (5, False)
    assert await _all(reader, 5) == []  # already there: no wait for more input
    assert await _all(reader) == [Chunk(b"fg", 5)]
    assert (reader.position, reader.finished) == (7, True)


async def test_next_before_stops_before_a_chunk_that_starts_past_the_offset() -> None:
    # An earlier fault dropped bytes 2..6: the position is reached without a byte at 4.
    reader = await _reader_of([Chunk(b"ab", 0), Chunk(b"gh", 6)])
    assert await _all(reader, 4) == [Chunk(b"ab", 0)]
    assert (reader.position, reader.finished) == (2, False)
    assert await _all(reader) == [Chunk(b"gh", 6)]


async def test_a_close_ends_the_stream_and_what_follows_is_discarded() -> None:
    reader = await _reader_of([Chunk(b"ab", 0), Close("rst"), Chunk(b"cd", 2), Boundary()])
    assert await _all(reader) == [Chunk(b"ab", 0), Close("rst")]
    assert reader.finished


async def test_empty_chunks_are_skipped() -> None:
    reader = await _reader_of([Chunk(b"", 0), Chunk(b"a", 0)])
    assert await _all(reader) == [Chunk(b"a", 0)]


async def test_drain_counts_held_and_unread_bytes() -> None:
    reader = await _reader_of([Chunk(b"abcd", 0), Chunk(b"ef", 4)])
    assert await _all(reader, 1) == [Chunk(b"a", 0)]
    assert await reader.drain() == 5
    assert await reader.next() is None


async def test_at_end_peeks_without_consuming() -> None:
    reader = await _reader_of([Chunk(b"a", 0)])
    assert not await reader.at_end()
    assert await reader.next() == Chunk(b"a", 0)
    assert await reader.at_end()


async def test_forward_until_says_whether_the_offset_was_reached() -> None:
    out_tx, out_rx = trio.open_memory_channel[Item](10)
    assert await forward_until(await _reader_of([Chunk(b"abc", 0)]), out_tx, 3)
    assert not await forward_until(await _reader_of([Chunk(b"abc", 0)]), out_tx, 4)
    assert [out_rx.receive_nowait() for _ in range(2)] == [Chunk(b"abc", 0)] * 2


async def test_forward_until_time_keeps_the_item_whose_send_was_interrupted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reader = await _reader_of([Chunk(b"ab", 0), Chunk(b"cd", 2)])
    out_tx, _out_rx = trio.open_memory_channel[Item](0)  # nobody receives
    assert await forward_until_time(reader, out_tx, deadline=0.5)
    assert trio.current_time() == 0.5
    assert reader.position == 0  # the chunk went back: nothing was delivered
    assert await reader.next() == Chunk(b"ab", 0)


async def test_forward_until_time_reports_an_end_before_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reader = await _reader_of([Chunk(b"ab", 0)])
    out_tx, out_rx = trio.open_memory_channel[Item](1)
    assert not await forward_until_time(reader, out_tx, deadline=0.5)
    assert trio.current_time() == 0.0
    assert out_rx.receive_nowait() == Chunk(b"ab", 0)
