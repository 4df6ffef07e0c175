"""tearline's additions to Toxiproxy's bodies, without sockets: a proxy's toxics in its
create and populate bodies, a toxic's ``connection``, ``client`` and ``from``, a body over the
bound, and a handler that fails (Toxiproxy's JSON 500, never a plain-text one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.control.api import ControlApi
from harness.control.toxicity import Aimed, ClientTarget
from harness.faults.position import Position
from tests.control.test_api import FakeRunner, call, text

UP = "127.0.0.1:28500"
NOT_AN_ADDRESS = "client: must be an IP address or address:port"
ONE_ANCHOR = "give exactly one of offset, frame, utf8_char, match, request_end, after_ms"


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def api(runner: FakeRunner) -> ControlApi:
    return ControlApi(runner)


LATENCY = {"type": "latency", "attributes": {"latency": 5}}


def _proxy(**extra: Any) -> dict[str, Any]:
    return {"name": "p", "listen": "127.0.0.1:0", "upstream": UP, **extra}


async def test_a_proxy_is_created_with_its_toxics_before_it_listens(
    api: ControlApi, runner: FakeRunner
) -> None:
    body = _proxy(toxics=[LATENCY, {"type": "noop", "name": "n", "stream": "upstream"}])
    created = await call(api, "POST", "/proxies", body)
    assert created.status == 201
    shown = json.loads(created.body)["toxics"]
    assert [t["name"] for t in shown] == ["n", "latency_downstream"]
    started = next(iter(runner.running.values()))
    assert [name for name, _ in started.faults()] == ["latency_downstream"]  # at the start


@pytest.mark.parametrize(
    ("toxics", "status", "error"),
    [
        ({"type": "latency"}, 400, "toxics: must be a list of toxics"),
        (
            [LATENCY, {"type": "bandwidth", "attributes": {"rate": -1}}],
            400,
            "toxics[1].attributes.rate: must be >= 0 (got -1)",
        ),
        ([LATENCY, LATENCY], 409, "toxics[1]: toxic already exists"),
        ([{"type": "lag"}], 400, "toxics[0]: invalid toxic type"),
    ],
)
async def test_a_refused_toxic_creates_nothing(
    api: ControlApi, runner: FakeRunner, toxics: Any, status: int, error: str
) -> None:
    refused = await call(api, "POST", "/proxies", _proxy(toxics=toxics))
    assert (refused.status, json.loads(refused.body)) == (
        status,
        {"error": error, "status": status},
    )
    assert text(await call(api, "GET", "/proxies")) == "{}"
    assert runner.running == {}


async def test_populate_sets_the_listed_toxics_even_on_a_proxy_it_keeps(api: ControlApi) -> None:
    entry = {"name": "p", "listen": "127.0.0.1:28511", "upstream": UP}
    await call(api, "POST", "/populate", [entry])
    await call(api, "POST", "/proxies/p/toxics", LATENCY)
    kept = await call(api, "POST", "/populate", [entry])  # no toxics key: left alone
    assert [t["name"] for t in json.loads(kept.body)["proxies"][0]["toxics"]] == [
        "latency_downstream"
    ]
    listed = {**entry, "toxics": [{"type": "noop"}]}
    replaced = await call(api, "POST", "/populate", [listed])
    assert [t["name"] for t in json.loads(replaced.body)["proxies"][0]["toxics"]] == [
        "noop_downstream"
    ]
    bad = await call(api, "POST", "/populate", [{**entry, "toxics": [{"type": "lag"}]}])
    assert json.loads(bad.body) == {
        "error": "toxics[0]: invalid toxic type at proxy 1",
        "status": 400,
        "proxies": None,
    }


async def test_a_toxics_aims_are_its_fault_and_show_in_its_json(api: ControlApi) -> None:
    await call(api, "POST", "/proxies", _proxy())
    body = {
        **LATENCY,
        "connection": 3,
        "client": "127.0.0.2",
        "from": {"match": "ERROR"},
    }
    made = await call(api, "POST", "/proxies/p/toxics", body)
    assert json.loads(made.body) == {
        "attributes": {"latency": 5, "jitter": 0},
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1,
        "connection": 3,
        "client": "127.0.0.2",
        "from": {"match": "ERROR"},
    }
    record = api.proxies["p"].toxics[0]
    assert isinstance(record.fault, Aimed)
    assert (record.fault.connection, record.fault.client, record.fault.start) == (
        3,
        ClientTarget("127.0.0.2"),
        Position(match="ERROR"),
    )
    updated = await call(
        api, "PATCH", "/proxies/p/toxics/latency_downstream", {"attributes": {"latency": 9}}
    )
    shown = json.loads(updated.body)
    assert (shown["attributes"]["latency"], shown["connection"], shown["from"]) == (
        9,
        3,
        {"match": "ERROR"},
    )


@pytest.mark.parametrize(
    ("aims", "error"),
    [
        ({"connection": -1}, "connection: must be a whole number >= 0 (got -1)"),
        ({"connection": "2"}, 'connection: must be a whole number >= 0 (got "2")'),
        ({"connection": 2**31}, f"connection: must be <= {2**31 - 1} (got {2**31})"),
        ({"client": "node-2"}, f"{NOT_AN_ADDRESS} (got 'node-2')"),
        (
            {"client": "127.0.0.1:0"},
            f"{NOT_AN_ADDRESS} (got '127.0.0.1:0')",
        ),
        ({"client": 7}, f"{NOT_AN_ADDRESS} (got 7)"),
        (
            {"from": {"frame": 2}},
            "from.frame: frame positions need the link's framing; give the proxy a framing",
        ),
        ({"from": {"match": ""}}, "from.match: must not be empty"),
        (
            {"from": {"offset": 1, "match": "x"}},
            f"from: {ONE_ANCHOR} (got offset, match)",
        ),
    ],
)
async def test_bad_aims_are_refused_with_their_key(
    api: ControlApi, aims: dict[str, Any], error: str
) -> None:
    await call(api, "POST", "/proxies", _proxy())
    refused = await call(api, "POST", "/proxies/p/toxics", {**LATENCY, **aims})
    assert json.loads(refused.body) == {"error": error, "status": 400}
    assert text(await call(api, "GET", "/proxies/p/toxics")) == "[]"


@pytest.mark.parametrize(
    ("given", "target"),
    [
        ("127.0.0.1", ClientTarget("127.0.0.1")),
        ("localhost", ClientTarget("127.0.0.1")),
        ("127.0.0.1:50123", ClientTarget("127.0.0.1", 50123)),
        ("[::1]:50123", ClientTarget("::1", 50123)),
        ("::1", ClientTarget("::1")),
    ],
)
async def test_a_client_is_an_address_and_maybe_a_port(
    api: ControlApi, given: str, target: ClientTarget
) -> None:
    await call(api, "POST", "/proxies", _proxy())
    made = await call(api, "POST", "/proxies/p/toxics", {**LATENCY, "client": given})
    fault = api.proxies["p"].toxics[0].fault
    assert isinstance(fault, Aimed) and fault.client == target
    assert json.loads(made.body)["client"] == target.shown()
    assert target.matches((target.host, 50123)) and not target.matches(("127.0.0.9", 50123))


async def test_a_body_over_the_bound_is_a_413_with_toxiproxys_error_body(api: ControlApi) -> None:
    refused = await call(api, "POST", "/proxies", b'{"name":', too_large=True)
    assert (refused.status, text(refused)) == (
        413,
        '{"error":"bad request body: http: request body too large","status":413}\n',
    )


class FailingRunner(FakeRunner):
    async def stop(self, record: Any) -> None:
        raise KeyError(record.name)


async def test_a_failing_handler_answers_toxiproxys_json_500_and_logs_one_line() -> None:
    lines: list[str] = []
    api = ControlApi(FailingRunner(), log=lines.append)
    await call(api, "POST", "/proxies", _proxy())
    failed = await call(api, "DELETE", "/proxies/p")
    assert (failed.status, text(failed)) == (500, '{"error":"KeyError: \'p\'","status":500}\n')
    assert lines == ["DELETE /proxies/p: internal error: KeyError: 'p'"]
    assert (await call(api, "GET", "/version")).status == 200  # and it goes on
