"""The control API without sockets: a fake runner, Toxiproxy's bodies, codes and error texts
(as recorded from Toxiproxy 2.12), and where tearline answers differently on purpose."""

from __future__ import annotations

import errno
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.control.addresses import ListenAddress
from harness.control.api import ApiRequest, ControlApi
from harness.control.events import ConnectionLog
from harness.control.model import ProxyRecord
from harness.control.routes import Wire


@dataclass
class FakeRunner:
    taken: set[int] = field(default_factory=set)
    running: dict[int, ProxyRecord] = field(default_factory=dict)
    applied: list[list[str]] = field(default_factory=list)
    next_port: int = 40000

    async def start(self, record: ProxyRecord, address: ListenAddress, log: ConnectionLog) -> str:
        if address.port in self.taken or address.port in self.running:
            raise OSError(errno.EADDRINUSE, "Address already in use")
        port = address.port or self.next_port
        self.next_port += 1
        self.running[port] = record
        return f"{address.host}:{port}"

    async def stop(self, record: ProxyRecord) -> None:
        for port, running in list(self.running.items()):
            if running is record:
                del self.running[port]

    def apply(self, record: ProxyRecord) -> None:
        self.applied.append([name for name, _ in record.faults()])

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        yield  # one task here: nothing runs between a request's steps


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def api(runner: FakeRunner) -> ControlApi:
    return ControlApi(runner)


async def call(api: ControlApi, method: str, path: str, body: Any = None, **kw: Any) -> Wire:
    raw = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
    return await api.handle(ApiRequest(method, path, raw, **kw))


def text(wire: Wire) -> str:
    return wire.body.decode()


def header(wire: Wire, name: str) -> str | None:
    return next((v for k, v in wire.headers if k.lower() == name.lower()), None)


P1 = {"name": "p1", "listen": "127.0.0.1:28511", "upstream": "127.0.0.1:28500"}
P1_JSON = (
    '{"name":"p1","listen":"127.0.0.1:28511","upstream":"127.0.0.1:28500","enabled":true,'
    '"Logger":{},"toxics":[]}'
)


async def test_create_show_list_and_delete_a_proxy(api: ControlApi) -> None:
    created = await call(api, "POST", "/proxies", P1)
    assert (created.status, text(created)) == (201, P1_JSON)
    assert header(created, "Content-Type") == "application/json"
    assert len(header(created, "X-Toxiproxy-Request-Id") or "") == 20
    assert text(await call(api, "GET", "/proxies/p1")) == P1_JSON
    assert text(await call(api, "GET", "/proxies")) == '{"p1":' + P1_JSON + "}"
    deleted = await call(api, "DELETE", "/proxies/p1")
    assert (deleted.status, deleted.body, header(deleted, "Content-Type")) == (204, b"", None)
    missing = await call(api, "DELETE", "/proxies/p1")
    assert (missing.status, text(missing)) == (404, '{"error":"proxy not found","status":404}\n')
    assert header(missing, "Content-Type") == "text/plain; charset=utf-8"
    assert header(missing, "X-Content-Type-Options") == "nosniff"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (
            b"{bad",
            400,
            "bad request body: invalid character 'b' looking for beginning of object key string",
        ),
        (b'{"name":"px"', 400, "bad request body: unexpected EOF"),
        (b"", 400, "bad request body: EOF"),
        (
            b"[]",
            400,
            "bad request body: json: cannot unmarshal array into Go value of type toxiproxy.Proxy",
        ),
        (b"null", 400, "missing required field: name"),
        (
            b'{"name":5,"upstream":"u"}',
            400,
            "bad request body: json: cannot unmarshal number into Go struct field Proxy.name of "
            "type string",
        ),
        (
            b'{"name":"px","upstream":"u","enabled":"yes"}',
            400,
            "bad request body: json: cannot unmarshal string into Go struct field Proxy.enabled "
            "of type bool",
        ),
        (b'{"name":"px"}', 400, "missing required field: upstream"),
        (b'{"name":"p1","upstream":"u"}', 409, "proxy already exists"),
        (
            b'{"name":"px","listen":"bogus","upstream":"u"}',
            500,
            "listen tcp: address bogus: missing port in address",
        ),
        (
            b'{"name":"px","listen":"127.0.0.1:99999","upstream":"u"}',
            500,
            "listen tcp: address 99999: invalid port",
        ),
        (
            b'{"name":"px","listen":"127.0.0.1:http2x","upstream":"u"}',
            500,
            "listen tcp: address tcp/http2x: unknown port",
        ),
        (
            b'{"name":"px","listen":"127.0.0.1:28511","upstream":"u"}',
            500,
            "listen tcp 127.0.0.1:28511: bind: address already in use",
        ),
        (
            b'{"name":"px","listen":"0.0.0.0:8666","upstream":"u"}',
            500,
            "listen tcp 0.0.0.0:8666: refused: not a loopback address (start tearline with "
            "--allow-remote to listen on other interfaces)",
        ),
    ],
)
async def test_bad_proxies_get_toxiproxys_code_and_text(
    api: ControlApi, body: bytes, status: int, error: str
) -> None:
    await call(api, "POST", "/proxies", P1)
    answer = await call(api, "POST", "/proxies", body)
    assert (answer.status, json.loads(answer.body)) == (status, {"error": error, "status": status})
    assert answer.body.endswith(b"}\n")
    assert list(json.loads((await call(api, "GET", "/proxies")).body)) == ["p1"]  # unchanged


async def test_keys_match_case_insensitively_and_the_last_wins(api: ControlApi) -> None:
    body = b'{"NAME":"ci","Listen":"127.0.0.1:1","UPSTREAM":"u","name":"ci2","x":1}garbage'
    created = await call(api, "POST", "/proxies", body)
    assert json.loads(created.body)["name"] == "ci2"


async def test_a_disabled_proxy_echoes_its_listen_until_started(api: ControlApi) -> None:
    body = {"name": "p2", "listen": "localhost:28512", "upstream": "u", "enabled": False}
    assert (
        json.loads((await call(api, "POST", "/proxies", body)).body)["listen"] == "localhost:28512"
    )
    enabled = await call(api, "PATCH", "/proxies/p2", {"enabled": True})
    assert json.loads(enabled.body)["listen"] == "127.0.0.1:28512"


async def test_update_moves_enables_and_refuses_like_toxiproxy(
    api: ControlApi, runner: FakeRunner
) -> None:
    await call(api, "POST", "/proxies", P1)
    await call(api, "POST", "/proxies", {**P1, "name": "p2", "listen": "127.0.0.1:28512"})
    bad = await call(api, "PATCH", "/proxies/p2", {"listen": "bad"})
    assert (bad.status, json.loads(bad.body)["error"]) == (
        500,
        "address bad: missing port in address",
    )
    taken = await call(api, "PATCH", "/proxies/p2", {"listen": "127.0.0.1:28511"})
    assert (
        json.loads(taken.body)["error"]
        == "listen tcp 127.0.0.1:28511: bind: address already in use"
    )
    shown = json.loads((await call(api, "GET", "/proxies/p2")).body)
    assert (shown["listen"], shown["enabled"]) == ("127.0.0.1:28511", False)  # as Toxiproxy
    assert (await call(api, "PATCH", "/proxies/nope", b"xx")).status == 404  # lookup first
    assert (await call(api, "PATCH", "/proxies/p2", b"xx")).status == 400
    assert (await call(api, "POST", "/proxies/p2", {"name": "renamed"})).status == 200
    assert "p2" in json.loads((await call(api, "GET", "/proxies")).body)


async def test_toxics_have_toxiproxys_shapes_and_checks(
    api: ControlApi, runner: FakeRunner
) -> None:
    await call(api, "POST", "/proxies", P1)
    path = "/proxies/p1/toxics"
    latency = await call(api, "POST", path, {"type": "latency", "attributes": {"latency": 100}})
    assert (latency.status, text(latency)) == (
        200,
        '{"attributes":{"latency":100,"jitter":0},"name":"latency_downstream","type":"latency",'
        '"stream":"downstream","toxicity":1}',
    )
    assert runner.applied[-1] == ["latency_downstream"]
    duplicate = await call(
        api, "POST", path, {"name": "latency_downstream", "type": "latency", "stream": "upstream"}
    )
    assert duplicate.status == 409
    mixed = await call(api, "POST", path, {"type": "latency", "stream": "UpStream"})
    assert json.loads(mixed.body)["name"] == "latency_UpStream"
    third = await call(
        api, "POST", path, {"name": "third", "type": "noop", "toxicity": 0.333333333333}
    )
    assert b'"toxicity":0.33333334' in third.body
    order = [t["name"] for t in json.loads((await call(api, "GET", path)).body)]
    assert order == ["latency_UpStream", "latency_downstream", "third"]  # upstream first


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"type": "bogus"}, 400, "invalid toxic type"),
        ({}, 400, "invalid toxic type"),
        (
            {"type": "latency", "stream": "sideways"},
            400,
            "stream was invalid, can be either upstream or downstream",
        ),
        (
            {"type": "bogus", "stream": "bogus"},
            400,
            "stream was invalid, can be either upstream or downstream",
        ),
        (
            {"name": "t1", "type": "latency", "attributes": {"latency": "x"}},
            409,
            "toxic already exists",
        ),
        (
            {"type": "latency", "attributes": {"latency": "100"}},
            400,
            "bad request body: json: cannot unmarshal string into Go struct field "
            "LatencyToxic.attributes.latency of type int64",
        ),
        (
            {"type": "latency", "attributes": {"latency": 1.5}},
            400,
            "bad request body: json: cannot unmarshal number 1.5 into Go struct field "
            "LatencyToxic.attributes.latency of type int64",
        ),
        (
            {"type": "slicer", "attributes": {"average_size": "1"}},
            400,
            "bad request body: json: cannot unmarshal string into Go struct field "
            "SlicerToxic.attributes.average_size of type int",
        ),
        (
            {"type": "timeout", "attributes": 5},
            400,
            "bad request body: json: cannot unmarshal number into Go struct field "
            "ToxicWrapper.attributes of type toxics.NoopToxic",
        ),
        (
            {"type": "noop", "toxicity": "1"},
            400,
            "bad request body: json: cannot unmarshal string into Go struct field "
            "ToxicWrapper.toxicity of type float32",
        ),
        # tearline's checks (Toxiproxy accepts these, and a negative rate crashes it)
        (
            {"type": "bandwidth", "attributes": {"rate": -1}},
            400,
            "attributes.rate: must be >= 0 (got -1)",
        ),
        (
            {"type": "latency", "attributes": {"latency": 10, "jitter": 20}},
            400,
            "attributes.jitter: must be <= latency (10) (got 20)",
        ),
        (
            {"type": "latency", "attributes": {"latency": 10**9}},
            400,
            "attributes.latency: must be <= 600000 (got 1000000000)",
        ),
    ],
)
async def test_bad_toxics_get_the_right_code_and_text(
    api: ControlApi, body: dict[str, Any], status: int, error: str
) -> None:
    await call(api, "POST", "/proxies", P1)
    await call(api, "POST", "/proxies/p1/toxics", {"name": "t1", "type": "noop"})
    answer = await call(api, "POST", "/proxies/p1/toxics", body)
    assert (answer.status, json.loads(answer.body)) == (status, {"error": error, "status": status})


async def test_a_toxic_update_merges_and_a_failed_one_changes_nothing(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", P1)
    path = "/proxies/p1/toxics/latency_downstream"
    await call(
        api, "POST", "/proxies/p1/toxics", {"type": "latency", "attributes": {"latency": 100}}
    )
    merged = await call(api, "PATCH", path, {"attributes": {"jitter": 7}, "name": "renamed"})
    assert json.loads(merged.body)["attributes"] == {"latency": 100, "jitter": 7}
    assert json.loads(merged.body)["name"] == "latency_downstream"
    kept = await call(api, "POST", path, {"toxicity": 0.5})
    assert json.loads(kept.body)["toxicity"] == 0.5
    failed = await call(
        api, "PATCH", path, {"toxicity": 1, "attributes": {"latency": "zz", "jitter": 9}}
    )
    assert failed.status == 400
    after = json.loads((await call(api, "GET", path)).body)
    assert (after["attributes"], after["toxicity"]) == ({"latency": 100, "jitter": 7}, 0.5)
    assert (await call(api, "PATCH", "/proxies/p1/toxics/nope", b"xx")).status == 404


async def test_tearline_faults_are_toxics_with_their_scenario_fields(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", {**P1, "framing": "ndjson"})
    kill = {"type": "kill", "attributes": {"how": "fin", "at": {"frame": 3, "fraction": 0.5}}}
    made = await call(api, "POST", "/proxies/p1/toxics", kill)
    assert made.status == 200
    assert json.loads(made.body)["attributes"] == kill["attributes"]
    wrong = {"name": "k2", "type": "kill", "attributes": {"at": {"frame": 0}}}
    answer = await call(api, "POST", "/proxies/p1/toxics", wrong)
    assert json.loads(answer.body)["error"] == "attributes.at.frame: must be >= 1 (got 0)"
    unknown = {"name": "k3", "type": "split", "attributes": {"at": {"offset": 1}, "bogus": 1}}
    assert json.loads((await call(api, "POST", "/proxies/p1/toxics", unknown)).body)[
        "error"
    ].startswith("attributes.bogus: ")


async def test_frame_positions_need_a_framing(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", P1)
    body = {"type": "split", "attributes": {"at": {"frame": 2}}}
    answer = await call(api, "POST", "/proxies/p1/toxics", body)
    assert answer.status == 400
    assert "give the proxy a framing" in json.loads(answer.body)["error"]


async def test_populate_validates_first_keeps_unchanged_and_stops_at_a_failure(
    api: ControlApi, runner: FakeRunner
) -> None:
    empty = await call(api, "POST", "/populate", [])
    assert (empty.status, text(empty), header(empty, "Content-Type")) == (
        201,
        '{"proxies":null}',
        "application/json",
    )
    bad = await call(api, "POST", "/populate", [P1, {"listen": "x:1", "upstream": "u"}])
    assert (
        text(bad)
        == '{"error":"missing required field: name at proxy 2","status":400,"proxies":null}'
    )
    assert json.loads((await call(api, "GET", "/proxies")).body) == {}
    await call(api, "POST", "/proxies", P1)
    await call(api, "POST", "/proxies/p1/toxics", {"type": "noop"})
    same = await call(
        api, "POST", "/populate", [{**P1, "listen": "localhost:28511", "enabled": False}]
    )
    assert json.loads(same.body)["proxies"][0]["toxics"][0]["name"] == "noop_downstream"
    runner.taken.add(28519)
    partial = await call(
        api,
        "POST",
        "/populate",
        [
            {"name": "z1", "listen": "127.0.0.1:28518", "upstream": "u"},
            {"name": "z2", "listen": "127.0.0.1:28519", "upstream": "u"},
            {"name": "z3", "listen": "127.0.0.1:28517", "upstream": "u"},
        ],
    )
    shown = json.loads(partial.body)
    assert (partial.status, shown["status"], [p["name"] for p in shown["proxies"]]) == (
        500,
        500,
        ["z1"],
    )
    assert "z3" not in json.loads((await call(api, "GET", "/proxies")).body)


async def test_reset_starts_every_proxy_and_drops_every_toxic(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", {**P1, "enabled": False})
    await call(api, "POST", "/proxies/p1/toxics", {"type": "noop"})
    reset = await call(api, "POST", "/reset", b"garbage")
    assert (reset.status, reset.body) == (204, b"")
    shown = json.loads((await call(api, "GET", "/proxies/p1")).body)
    assert (shown["enabled"], shown["toxics"]) == (True, [])


async def test_the_router_answers_as_gorilla_mux(api: ControlApi) -> None:
    unknown = await call(api, "GET", "/nope")
    assert (unknown.status, unknown.body, header(unknown, "X-Toxiproxy-Request-Id")) == (
        404,
        b"404 page not found\n",
        None,
    )
    assert (await call(api, "GET", "/proxies/")).status == 404
    assert (await call(api, "GET", "/proxies/a/b")).status == 404  # %2F decodes to a slash
    moved = await call(api, "GET", "//proxies")
    assert (moved.status, header(moved, "Location")) == (301, "/proxies")
    assert header(await call(api, "GET", "/proxies/../version"), "Location") == "/version"
    for method, path in [("PUT", "/proxies"), ("HEAD", "/version"), ("GET", "/reset")]:
        wrong = await call(api, method, path)
        assert (wrong.status, wrong.body, wrong.headers) == (405, b"", [])
    browser = await call(api, "GET", "/version", user_agent="Mozilla/5.0")
    assert (browser.status, browser.body) == (403, b"User agent not allowed\n")
    fine = await call(api, "GET", "/version", user_agent="mozilla/5.0")
    assert fine.status == 200 and fine.body.endswith(b'"}\n')
    assert header(fine, "Content-Type") == "application/json;charset=utf-8"


async def test_long_bodies_are_chunked_like_go(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", P1)
    for name, size in (("a", 2048), ("b", 2049)):
        prefix = len('{"attributes":{},"name":"","type":"noop","stream":"downstream","toxicity":1}')
        body = {"name": name * (size - prefix), "type": "noop"}
        answer = await call(api, "POST", "/proxies/p1/toxics", body)
        assert (len(answer.body), answer.chunked) == (size, size > 2048)


async def test_names_are_escaped_as_go_escapes_them(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", P1)
    body = b'{"name":"<a&b>\\u2028\\u0000\xc3\xa9","type":"noop"}'
    answer = await call(api, "POST", "/proxies/p1/toxics", body)
    assert answer.body.startswith(
        b'{"attributes":{},"name":"\\u003ca\\u0026b\\u003e\\u2028\\u0000\xc3\xa9"'
    )
