"""tearline's control API driven by the real toxiproxy-python client (PyPI), and the traffic
effect of every Toxiproxy toxic through it."""

from __future__ import annotations

import errno
import random
from typing import Any

import pytest
import trio
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.proxy import Proxy as ClientProxy

from tests.control.conftest import Api
from tests.harness.conftest import LOOPBACK, read_all, read_exactly, sender, serve


def _port(proxy: ClientProxy) -> int:
    return int(proxy.listen.rsplit(":", 1)[1])


async def _create(api: Api, upstream: int, name: str = "svc") -> ClientProxy:
    proxy: ClientProxy = await api.call(Toxiproxy().create, f"{LOOPBACK}:{upstream}", name)
    return proxy


async def _round_trip(port: int, data: bytes = b"ping") -> float:
    async with await trio.open_tcp_stream(LOOPBACK, port) as stream:
        started = trio.current_time()
        await stream.send_all(data)
        assert await read_exactly(stream, len(data)) == data
        return trio.current_time() - started


async def test_the_client_creates_lists_and_destroys_proxies(api: Api, echo_port: int) -> None:
    client = Toxiproxy()
    assert await api.call(client.running)
    version = await api.call(client.version)
    assert version.startswith(b'{"version": "2.12.0')
    proxy = await _create(api, echo_port)
    assert proxy.listen.startswith("127.0.0.1:") and _port(proxy) > 0  # it sent 127.0.0.1:0
    assert proxy.enabled
    assert list(await api.call(client.proxies)) == ["svc"]
    with pytest.raises(ProxyExists):
        await _create(api, echo_port)
    assert await _round_trip(_port(proxy)) < 1
    assert await api.call(client.destroy, proxy)
    with pytest.raises(NotFound):
        await api.call(client.destroy, proxy)
    assert await api.call(client.proxies) == {}


async def test_toxics_are_added_updated_and_removed_on_open_connections(
    api: Api, echo_port: int
) -> None:
    proxy = await _create(api, echo_port)
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:

        async def trip() -> float:
            started = trio.current_time()
            await stream.send_all(b"x")
            assert await read_exactly(stream, 1) == b"x"
            return trio.current_time() - started

        assert await trip() < 0.1
        await api.call(proxy.add_toxic, type="latency", attributes={"latency": 300})
        assert await trip() >= 0.3  # the open connection got it
        path = "/proxies/svc/toxics/latency_downstream"
        answer = await api.call(APIConsumer.post, path, json={"attributes": {"latency": 50}})
        assert answer.json()["attributes"] == {"latency": 50, "jitter": 0}
        assert 0.05 <= await trip() < 0.25
        toxics = await api.call(proxy.toxics)
        assert list(toxics) == ["latency_downstream"]
        assert toxics["latency_downstream"].attributes == {"latency": 50, "jitter": 0}
        assert await api.call(proxy.destroy_toxic, "latency_downstream")
        assert await trip() < 0.1
    with pytest.raises(NotFound):
        await api.call(proxy.destroy_toxic, "latency_downstream")


async def test_bad_toxics_are_refused_with_toxiproxys_errors(api: Api, echo_port: int) -> None:
    proxy = await _create(api, echo_port)
    with pytest.raises(InvalidToxic) as bad_type:
        await api.call(proxy.add_toxic, type="lag")
    assert bad_type.value.args[0] == b'{"error":"invalid toxic type","status":400}\n'
    with pytest.raises(InvalidToxic) as negative:
        await api.call(proxy.add_toxic, type="latency", attributes={"latency": -5})
    assert b"attributes.latency: must be" in negative.value.args[0]
    await api.call(proxy.add_toxic, type="latency", attributes={"latency": 5})
    with pytest.raises(ProxyExists):  # the client maps 409 to ProxyExists
        await api.call(proxy.add_toxic, type="latency", attributes={"latency": 5})
    assert await _round_trip(_port(proxy)) < 1  # still serving


async def test_a_disabled_proxy_refuses_connections_and_keeps_its_toxics(
    api: Api, echo_port: int
) -> None:
    proxy = await _create(api, echo_port)
    await api.call(proxy.add_toxic, type="latency", attributes={"latency": 10})
    await api.call(proxy.disable)
    with pytest.raises(OSError):
        await trio.open_tcp_stream(LOOPBACK, _port(proxy))
    await api.call(proxy.enable)
    assert await _round_trip(_port(proxy)) >= 0.01
    assert list(await api.call(proxy.toxics)) == ["latency_downstream"]


async def test_reset_enables_every_proxy_and_removes_every_toxic(api: Api, echo_port: int) -> None:
    client = Toxiproxy()
    proxy = await _create(api, echo_port)
    await api.call(proxy.add_toxic, type="latency", attributes={"latency": 500})
    await api.call(proxy.disable)
    assert await api.call(client.reset)
    assert (await api.call(client.get_proxy, "svc")).enabled
    assert await api.call(proxy.toxics) == {}
    assert await _round_trip(_port(proxy)) < 0.4


async def test_populate_creates_new_proxies_and_keeps_unchanged_ones(
    api: Api, echo_port: int
) -> None:
    client = Toxiproxy()
    first = await _create(api, echo_port)
    await api.call(first.add_toxic, type="latency", attributes={"latency": 1})
    wanted: list[dict[str, Any]] = [
        {"name": "svc", "upstream": first.upstream, "listen": first.listen},
        {"name": "svc2", "upstream": first.upstream, "listen": f"{LOOPBACK}:0"},
    ]
    made = await api.call(client.populate, wanted)
    assert [p.name for p in made] == ["svc2"]  # svc was unchanged: skipped
    assert list(await api.call(first.toxics)) == ["latency_downstream"]
    # The server's own /populate: all in one call, unchanged proxies returned as they are.
    answer = await api.call(APIConsumer.post, "/populate", json=wanted[:1])
    assert answer.status_code == 201
    assert answer.json()["proxies"][0]["toxics"][0]["name"] == "latency_downstream"


# -- the traffic effect of each toxic ---------------------------------------------------------
async def test_latency_stays_within_its_jitter(api: Api, echo_port: int) -> None:
    proxy = await _create(api, echo_port)
    attributes = {"latency": 100, "jitter": 30}
    await api.call(proxy.add_toxic, type="latency", attributes=attributes)
    times = [await _round_trip(_port(proxy)) for _ in range(8)]
    # never early (a deterministic floor); late only by what a loaded machine's scheduling
    # adds, which has no bound a test may rely on: generous, the accuracy is a benchmark's
    assert all(0.07 <= t <= 0.13 + 0.5 for t in times), times
    assert max(times) - min(times) > 0.005  # the jitter is there


async def test_bandwidth_is_never_exceeded(api: Api) -> None:
    """The rate is a ceiling the proxy never passes, whatever the load (a proxy slowed by
    other work can only be slower: how close it keeps to the rate is measured, next to
    Toxiproxy's, by ``benchmarks/bench_proxy_api.py``; the schedule itself is exact on the
    virtual clock, ``tests/faults/test_throttle.py``)."""
    size, rate_kb = 1_000_000, 2000
    upstream = await serve(api.nursery, sender(bytes(size), then="fin"))
    proxy = await _create(api, upstream)
    await api.call(proxy.add_toxic, type="bandwidth", attributes={"rate": rate_kb})
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        started = trio.current_time()
        reads = await read_all(stream)
        elapsed = trio.current_time() - started
    assert len(reads.data) == size
    rate = size / elapsed  # each piece of 100 ms worth goes when the one before has had its time
    assert rate / (rate_kb * 1000) <= 1.1, rate


async def test_bandwidth_zero_passes_nothing_until_removed(api: Api, echo_port: int) -> None:
    proxy = await _create(api, echo_port)
    await api.call(proxy.add_toxic, type="bandwidth", attributes={"rate": 0})
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        await stream.send_all(b"held")
        with trio.move_on_after(0.3) as waited:
            await stream.receive_some(10)
        assert waited.cancelled_caught
        await api.call(proxy.destroy_toxic, "bandwidth_downstream")
        assert await read_exactly(stream, 4) == b"held"  # nothing lost


async def test_reset_peer_resets_the_connection(api: Api, echo_port: int) -> None:
    proxy = await _create(api, echo_port)
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        await stream.send_all(b"a")
        assert await read_exactly(stream, 1) == b"a"
        # Added to a connection already open: still an RST (Toxiproxy sends a FIN here).
        await api.call(proxy.add_toxic, type="reset_peer", attributes={"timeout": 0})
        await stream.send_all(b"hello")
        with pytest.raises(trio.BrokenResourceError) as broken:
            while await stream.receive_some(100):
                pass
    assert isinstance(broken.value.__cause__, OSError)
    assert broken.value.__cause__.errno == errno.ECONNRESET


async def test_limit_data_stops_at_the_exact_byte(api: Api) -> None:
    upstream = await serve(api.nursery, sender(bytes(range(256)) * 40))
    proxy = await _create(api, upstream)
    await api.call(proxy.add_toxic, type="limit_data", attributes={"bytes": 4321})
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        reads = await read_all(stream)
    assert reads.data == (bytes(range(256)) * 40)[:4321]
    assert reads.end == "eof"


async def test_slicer_writes_toxiproxys_slices(api: Api) -> None:
    upstream = await serve(api.nursery, sender(bytes(1000), then="fin"))
    proxy = await _create(api, upstream)
    attributes = {"average_size": 100, "size_variation": 0, "delay": 20_000}
    await api.call(proxy.add_toxic, type="slicer", attributes=attributes)
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        reads = await read_all(stream)
    sizes = [len(part) for part in reads.parts]
    assert sum(sizes) == 1000
    assert len(sizes) >= 12 and all(size in (62, 63, 125) for size in sizes), sizes


async def test_slow_close_delays_the_end(api: Api) -> None:
    upstream = await serve(api.nursery, sender(b"BYE\n", then="fin"))
    proxy = await _create(api, upstream)
    await api.call(proxy.add_toxic, type="slow_close", attributes={"delay": 300})
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        started = trio.current_time()
        assert await read_exactly(stream, 4) == b"BYE\n"
        assert trio.current_time() - started < 0.2
        assert await stream.receive_some(10) == b""
        assert trio.current_time() - started >= 0.3


async def test_timeout_drops_and_then_closes(api: Api, echo_port: int) -> None:
    proxy = await _create(api, echo_port)
    await api.call(proxy.add_toxic, type="timeout", attributes={"timeout": 300})
    async with await trio.open_tcp_stream(LOOPBACK, _port(proxy)) as stream:
        started = trio.current_time()
        await stream.send_all(b"lost")
        assert await stream.receive_some(10) == b""  # nothing came back, then the close
        assert trio.current_time() - started >= 0.29


async def test_toxicity_follows_the_seed(api: Api, echo_port: int) -> None:
    proxy = await _create(api, echo_port)
    attributes = {"latency": 200}
    await api.call(proxy.add_toxic, type="latency", toxicity=0.5, attributes=attributes)
    hits = [await _round_trip(_port(proxy)) >= 0.2 for _ in range(12)]
    assert 0 < sum(hits) < 12
    # The same seed, proxy name, run and connection numbers draw the same: recompute them.
    from harness.api_server.runtime import proxy_seed  # noqa: PLC0415

    seed = proxy_seed(1234, "svc", 1)
    expected = [
        random.Random(f"{seed}:{n}:downstream:latency_downstream").random() < 0.5
        for n in range(1, 13)
    ]
    assert hits == expected
