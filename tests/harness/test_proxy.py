"""The fault proxy over real loopback sockets: pass-through, each fault kind, its timeline.

A tiny producer (raw trio streams) sits behind the proxy; the test is the consumer. Faults are
placed at known offsets of a known wire, and the assertions are on exact bytes, on where the
consumer's reads were cut, on how its stream ended, and on the proxy's timeline.
"""

from __future__ import annotations

import socket

import trio

from harness.evidence.timeline import MAX_FAULT_RECORDS, Timeline
from harness.faults import (
    BogusLength,
    Corrupt,
    DropFrame,
    DuplicateFrame,
    Kill,
    Merge,
    Split,
)
from harness.faults.position import Position
from harness.proxy.drain import proc_key, wait_drained
from harness.proxy.sockio import reset
from tests.harness.conftest import (
    LOOPBACK,
    TEXTS,
    end_facts,
    fault_facts,
    prefixed_link,
    read_all,
    read_exactly,
    segment_facts,
    sender,
    serve,
    start_proxy,
)

DATA = bytes(range(200))


async def test_pass_through_is_byte_exact_and_half_close_keeps_the_reply_path() -> None:
    # Catalogue case 61: the client finishes its request with a FIN and still gets the answer.
    greeting = bytes(range(256)) * 1200  # 300 KiB: more than one proxy read
    request = b"request:" + bytes(reversed(range(256))) * 700
    received: list[bytes] = []

    async def producer(stream: trio.SocketStream) -> None:
        await stream.send_all(greeting)
        got = await read_all(stream)  # until the consumer's FIN arrives through the proxy
        received.append(got.data)
        await stream.send_all(b"echo:" + got.data)
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        proxy, port = await start_proxy(nursery, await serve(nursery, producer))
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            assert await read_exactly(consumer, len(greeting)) == greeting
            await consumer.send_all(request)
            await consumer.send_eof()
            rest = await read_all(consumer)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert received == [request]
    assert rest.data == b"echo:" + request
    assert rest.end == "eof"
    down = len(greeting) + 5 + len(request)
    assert sorted(end_facts(proxy.timeline)) == [
        (1, "downstream", "eof", down, down),
        (1, "upstream", "eof", len(request), len(request)),
    ]
    # Segments tile each leg: consecutive offsets, nothing missing, nothing twice.
    for direction, total in (("downstream", down), ("upstream", len(request))):
        segments = segment_facts(proxy.timeline, direction)
        assert [offset for offset, _ in segments] == [
            sum(length for _, length in segments[:i]) for i in range(len(segments))
        ]
        assert sum(length for _, length in segments) == total
    assert proxy.timeline.faults == []
    assert proxy.errors == []


async def test_split_makes_exactly_two_reads() -> None:
    async with trio.open_nursery() as nursery:
        faults = [Split(at=Position(offset=70))]
        proxy, port = await start_proxy(
            nursery, await serve(nursery, sender(DATA, then="fin")), faults
        )
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert reads.parts == [DATA[:70], DATA[70:]]
    assert reads.end == "eof"
    assert fault_facts(proxy.timeline) == [(1, "downstream", "split", 70, "read boundary")]
    assert segment_facts(proxy.timeline) == [(0, 70), (70, 130)]
    assert end_facts(proxy.timeline) == [
        (1, "downstream", "eof", 200, 200),
        (1, "upstream", "eof", 0, 0),
    ]


async def test_split_at_a_frame_position_of_the_expected_wire() -> None:
    expected, locator = prefixed_link()
    start, _ = expected.spans[1]
    async with trio.open_nursery() as nursery:
        upstream = await serve(nursery, sender(expected.wire, then="fin"))
        faults = [Split(at=Position(frame=2, frame_offset=4))]
        proxy, port = await start_proxy(nursery, upstream, faults, locator)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        nursery.cancel_scope.cancel()

    cut = start + 4  # right after frame 2's length prefix
    assert reads.parts == [expected.wire[:cut], expected.wire[cut:]]
    assert fault_facts(proxy.timeline) == [(1, "downstream", "split", cut, "read boundary")]


async def test_merge_writes_frames_sent_apart_in_one_segment() -> None:
    expected, locator = prefixed_link()

    async def producer(stream: trio.SocketStream) -> None:
        for start, end in expected.spans:  # one write per frame
            await stream.send_all(expected.wire[start:end])
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        faults = [Merge(at=Position(frame=1), count_frames=4)]
        proxy, port = await start_proxy(nursery, await serve(nursery, producer), faults, locator)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        nursery.cancel_scope.cancel()

    size = len(expected.wire)
    assert reads.parts == [expected.wire]
    assert fault_facts(proxy.timeline) == [(1, "downstream", "merge", 0, f"{size} bytes, 1 write")]
    assert segment_facts(proxy.timeline) == [(0, size)]


async def test_kill_rst_resets_the_consumer_after_exactly_n_bytes() -> None:
    async with trio.open_nursery() as nursery:
        faults = [Kill(at=Position(offset=123), how="rst")]
        proxy, port = await start_proxy(nursery, await serve(nursery, sender(DATA)), faults)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert (reads.data, reads.end) == (DATA[:123], "rst")
    assert fault_facts(proxy.timeline) == [(1, "downstream", "kill", 123, "rst")]
    assert end_facts(proxy.timeline) == [(1, "downstream", "rst", 123, 200)]
    assert segment_facts(proxy.timeline) == [(0, 123)]


async def test_kill_fin_ends_the_consumer_stream_after_exactly_n_bytes() -> None:
    async with trio.open_nursery() as nursery:
        faults = [Kill(at=Position(offset=50), how="fin")]
        proxy, port = await start_proxy(nursery, await serve(nursery, sender(DATA)), faults)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert (reads.data, reads.end) == (DATA[:50], "eof")
    assert fault_facts(proxy.timeline) == [(1, "downstream", "kill", 50, "fin")]
    assert end_facts(proxy.timeline) == [(1, "downstream", "fin", 50, 200)]


async def test_kill_half_ends_downstream_while_upstream_still_flows() -> None:
    heard: list[bytes] = []

    async def producer(stream: trio.SocketStream) -> None:
        await stream.send_all(DATA)
        heard.append((await read_all(stream)).data)  # the consumer's words after the cut

    async with trio.open_nursery() as nursery:
        faults = [Kill(at=Position(offset=80), how="half")]
        proxy, port = await start_proxy(nursery, await serve(nursery, producer), faults)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
            await consumer.send_all(b"still here")
            await consumer.send_eof()
            await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert (reads.data, reads.end) == (DATA[:80], "eof")
    assert heard == [b"still here"]
    assert fault_facts(proxy.timeline) == [(1, "downstream", "kill", 80, "half")]
    assert end_facts(proxy.timeline) == [
        (1, "downstream", "half", 80, 200),
        (1, "upstream", "eof", 10, 10),
    ]


async def _relay_once(
    faults: list[Corrupt | DropFrame | DuplicateFrame | BogusLength],
) -> tuple[bytes, list[tuple[int, str, str, int | None, str]]]:
    """The prefixed link's wire through the proxy with ``faults``: what the consumer got, and
    the fault records."""
    expected, locator = prefixed_link()
    async with trio.open_nursery() as nursery:
        upstream = await serve(nursery, sender(expected.wire, then="fin"))
        proxy, port = await start_proxy(nursery, upstream, faults, locator)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        nursery.cancel_scope.cancel()
    assert reads.end == "eof"
    return reads.data, fault_facts(proxy.timeline)


async def test_corrupt_flips_exactly_the_declared_bytes() -> None:
    expected, _ = prefixed_link()
    at = expected.spans[1][0] + 4  # the first payload byte of frame 2
    data, faults = await _relay_once([Corrupt(at=Position(frame=2, frame_offset=4), count_bytes=2)])
    wire = bytearray(expected.wire)
    wire[at] ^= 0xFF
    wire[at + 1] ^= 0xFF
    assert data == bytes(wire)
    assert data[at : at + 2] == bytes([ord("s") ^ 0xFF, ord("e") ^ 0xFF])
    assert faults == [(1, "downstream", "corrupt", at, "2 bytes ^ 0xff")]


async def test_drop_frame_removes_exactly_that_frame() -> None:
    expected, _ = prefixed_link()
    start, end = expected.spans[2]
    data, faults = await _relay_once([DropFrame(frame=3)])
    assert data == expected.wire[:start] + expected.wire[end:]
    assert end - start == 4 + len(TEXTS[2])
    assert faults == [(1, "downstream", "drop_frame", start, "frame 3: 9 bytes dropped")]


async def test_duplicate_frame_writes_it_twice_in_a_row() -> None:
    expected, _ = prefixed_link()
    start, end = expected.spans[0]
    data, faults = await _relay_once([DuplicateFrame(frame=1)])
    frame = expected.wire[start:end]
    assert data == frame + frame + expected.wire[end:]
    assert faults == [
        (1, "downstream", "duplicate_frame", end, f"frame 1: {len(frame)} bytes again")
    ]


async def test_bogus_length_overwrites_only_the_length_prefix() -> None:
    expected, _ = prefixed_link()
    start, _ = expected.spans[3]
    data, faults = await _relay_once([BogusLength(frame=4, length=65535)])
    assert data == expected.wire[:start] + b"\x00\x00\xff\xff" + expected.wire[start + 4 :]
    assert faults == [(1, "downstream", "bogus_length", start, "frame 4: 65535")]


async def test_upstream_unreachable_resets_the_consumer_and_records_an_error() -> None:
    closed = socket.socket()  # bound, never listening: connecting to it is refused
    closed.bind((LOOPBACK, 0))
    dead_port = closed.getsockname()[1]
    try:
        async with trio.open_nursery() as nursery:
            proxy, port = await start_proxy(nursery, dead_port)
            async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
                reads = await read_all(consumer)
            await proxy.wait_idle()
            nursery.cancel_scope.cancel()
    finally:
        closed.close()

    assert (reads.data, reads.end) == (b"", "rst")
    assert end_facts(proxy.timeline) == [(1, "downstream", "error", 0, 0)]
    (error,) = proxy.errors
    assert error.startswith(f"connection 1: upstream {LOOPBACK}:{dead_port} unreachable: ")


async def test_a_fault_that_cannot_be_placed_resets_that_connection_only() -> None:
    # A frame position on a stream whose framing the proxy was not told: the proxy must not
    # crash, and must not end the consumer's stream as if it were complete.
    async with trio.open_nursery() as nursery:
        upstream = await serve(nursery, sender(DATA, then="fin"))
        faults = [Kill(at=Position(frame=2), connection=1)]
        proxy, port = await start_proxy(nursery, upstream, faults)
        async with await trio.open_tcp_stream(LOOPBACK, port) as first:
            cut = await read_all(first)
        async with await trio.open_tcp_stream(LOOPBACK, port) as second:
            clean = await read_all(second)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert cut.end == "rst"
    assert (clean.data, clean.end) == (DATA, "eof")
    (error,) = proxy.errors
    assert error == "faults[0].at.frame: frame positions need the link's framing"


async def test_a_consumer_gone_before_the_first_byte_does_not_stop_the_proxy() -> None:
    async def late_sender(stream: trio.SocketStream) -> None:
        await trio.lowlevel.checkpoint()  # yield once: the consumer's reset races the proxy
        try:
            await stream.send_all(DATA)
        except trio.BrokenResourceError:
            return
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        faults = [Split(at=Position(offset=10), connection=0)]
        proxy, port = await start_proxy(nursery, await serve(nursery, late_sender), faults)
        for _ in range(5):
            gone = await trio.open_tcp_stream(LOOPBACK, port)
            reset(gone)
            await gone.aclose()
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert reads.parts == [DATA[:10], DATA[10:]]
    assert proxy.errors == []
    assert proxy.connections == 6


async def test_a_producer_reset_is_recorded_as_the_peers() -> None:
    async def resetting(stream: trio.SocketStream) -> None:
        await stream.send_all(DATA)
        reset(stream)
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        faults = [Split(at=Position(offset=500))]  # a pipeline that never fires
        proxy, port = await start_proxy(nursery, await serve(nursery, resetting), faults)
        async with await trio.open_tcp_stream(LOOPBACK, port) as consumer:
            reads = await read_all(consumer)
        await proxy.wait_idle()
        nursery.cancel_scope.cancel()

    assert (reads.data, reads.end) == (DATA, "rst")
    assert end_facts(proxy.timeline) == [(1, "downstream", "peer-rst", 200, 200)]
    assert proxy.timeline.faults == []


async def test_a_boundary_toward_a_consumer_that_closed_counts_as_observed() -> None:
    # Nothing written after the boundary can reach a closed consumer, so nothing can be fused;
    # without this, a consumer that finished early made a declared split "unobserved" (I5).
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with listeners[0]:
        consumer = await trio.open_tcp_stream("127.0.0.1", port)
        proxy_side = await listeners[0].accept()
        key = proc_key(proxy_side.socket)
        assert key is not None
        await consumer.aclose()
        with trio.fail_after(2):
            assert await wait_drained(proxy_side.socket, key, timeout_s=1.0) is True
        await proxy_side.aclose()


def test_fault_records_are_bounded_and_the_first_are_kept() -> None:
    """A latency fault records every chunk it holds: a connection that lives for days must
    not grow its timeline without end."""
    timeline = Timeline()
    for offset in range(MAX_FAULT_RECORDS + 5):
        timeline.fault(0.0, 1, "downstream", "latency", offset, "delayed 0.0 ms")
    assert (len(timeline.faults), timeline.faults_dropped) == (MAX_FAULT_RECORDS, 5)
    assert [f.offset for f in timeline.faults[:2]] == [0, 1]
