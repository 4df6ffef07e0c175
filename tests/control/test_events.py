"""Which fault hit which connection (the events endpoints), the metrics, the window of kept
connections, and tearline's stream-aware toxics on a live stream."""

from __future__ import annotations

import json
from collections.abc import Mapping

import trio
from toxiproxy.api import APIConsumer

from harness.control.api import ApiRequest
from harness.control.events import ConnectionLog
from harness.faults import Latency
from harness.proxy.server import Proxy, ProxyConfig
from tests.control.conftest import Api, echo
from tests.harness.conftest import LOOPBACK, read_all, read_exactly, sender, serve


async def _proxy(api: Api, upstream: int, **extra: str) -> int:
    body = {"name": "svc", "listen": f"{LOOPBACK}:0", "upstream": f"{LOOPBACK}:{upstream}", **extra}
    answer = await api.call(APIConsumer.post, "/proxies", json=body)
    assert answer.status_code == 201, answer.text
    return int(answer.json()["listen"].rsplit(":", 1)[1])


async def _toxic(api: Api, body: Mapping[str, object]) -> None:
    answer = await api.call(APIConsumer.post, "/proxies/svc/toxics", json=body)
    assert answer.status_code == 200, answer.text


async def test_events_say_which_toxic_hit_which_connection(api: Api, echo_port: int) -> None:
    port = await _proxy(api, echo_port)
    await _toxic(api, {"name": "cut", "type": "limit_data", "attributes": {"bytes": 3}})
    for _ in range(2):
        async with await trio.open_tcp_stream(LOOPBACK, port) as stream:
            await stream.send_all(b"hello")
            assert (await read_all(stream)).data == b"hel"
    await trio.testing.wait_all_tasks_blocked()
    events = (await api.call(APIConsumer.get, "/proxies/svc/events")).json()
    assert [e["connection"] for e in events] == [1, 2]
    fired = events[0]["faults"]
    assert [(f["toxic"], f["kind"], f["direction"], f["offset"]) for f in fired] == [
        ("cut", "limit_data", "downstream", 3)
    ]
    assert events[0]["bytes"]["downstream"] == 3 and events[0]["closed"] is not None
    everything = (await api.call(APIConsumer.get, "/events")).json()
    assert {e["proxy"] for e in everything} == {"svc"}


async def test_metrics_count_connections_bytes_and_faults(api: Api, echo_port: int) -> None:
    port = await _proxy(api, echo_port)
    await _toxic(api, {"type": "latency", "attributes": {"latency": 1}})
    async with await trio.open_tcp_stream(LOOPBACK, port) as stream:
        await stream.send_all(b"12345")
        assert await read_exactly(stream, 5) == b"12345"
        answer = await api.call(APIConsumer.get, "/metrics")
    assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    lines = answer.text.splitlines()
    assert 'tearline_connections_total{proxy="svc"} 1.0' in lines
    assert 'tearline_connections_open{proxy="svc"} 1.0' in lines  # counted while open
    assert 'tearline_sent_bytes_total{direction="downstream",proxy="svc"} 5.0' in lines
    assert 'tearline_faults_fired_total{kind="latency",proxy="svc"} 1.0' in lines


async def test_the_window_keeps_few_connections_and_no_bytes() -> None:
    async with trio.open_nursery() as nursery:
        upstream = await serve(nursery, sender(bytes(10_000), then="fin"))
        log = ConnectionLog(window=3)
        config = ProxyConfig((LOOPBACK, upstream), (Latency(delay_ms=0, connection=0),))
        proxy = Proxy(config, store=log)
        port = await nursery.start(proxy.serve, LOOPBACK, 0)
        for _ in range(10):
            async with await trio.open_tcp_stream(LOOPBACK, port) as stream:
                assert len((await read_all(stream)).data) == 10_000
            while proxy.active:
                await proxy.wait_closed_connection()
        assert [r.number for r in log.records()] == [8, 9, 10]
        assert all(not r.timeline.legs and not r.timeline.segments for r in log.records())
        assert log.totals.connections == 10
        assert log.written("downstream") == 100_000
        assert proxy.timeline.faults == [] and proxy.timeline.legs == {}  # nothing shared
        nursery.cancel_scope.cancel()


async def test_a_kill_at_a_frame_of_a_live_ndjson_stream(api: Api) -> None:
    lines = b"".join(b'{"n":%d}\n' % n for n in range(1, 6))
    upstream = await serve(api.nursery, sender(lines))
    port = await _proxy(api, upstream, framing="ndjson")
    await _toxic(api, {"type": "kill", "attributes": {"how": "fin", "at": {"frame": 3}}})
    async with await trio.open_tcp_stream(LOOPBACK, port) as stream:
        reads = await read_all(stream)
    assert reads.data == b'{"n":1}\n{"n":2}\n'  # everything before frame 3, then the FIN
    assert reads.end == "eof"


async def test_a_stall_lets_heartbeats_through_on_a_live_stream(api: Api) -> None:
    upstream = await serve(api.nursery, echo)
    port = await _proxy(api, upstream, framing="ndjson")
    stall = {
        "type": "stall",
        "attributes": {
            "at": {"match": "STOP"},
            "duration_ms": 250,
            "heartbeat": "raw",
            "heartbeat_text": "\n",
            "heartbeat_interval_ms": 100,
        },
    }
    await _toxic(api, stall)
    async with await trio.open_tcp_stream(LOOPBACK, port) as stream:
        await stream.send_all(b"go STOP now")
        started = trio.current_time()
        got = b""
        while len(got.replace(b"\n", b"")) < len(b"go STOP now"):
            got += await stream.receive_some(100)
        assert got.replace(b"\n", b"") == b"go STOP now"
        assert got.count(b"\n") == 2  # at 100 and 200 ms, inside the 250 ms stall
        assert trio.current_time() - started >= 0.25


async def test_bad_input_leaves_the_server_serving(api: Api) -> None:
    wire = await api.api.handle(ApiRequest("POST", "/proxies", b"\xff\xfe{"))
    assert wire.status == 400
    assert json.loads(wire.body)["status"] == 400
    assert (await api.call(APIConsumer.get, "/version")).status_code == 200
