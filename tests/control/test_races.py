"""The API under a parallel test suite: 50 clients at once creating and deleting shared names
against the real command, and what the process holds afterwards.

The assertions are about end states and exact answers, never about timing: which of the 50
racing creates wins is chance, that exactly one does (and 49 get Toxiproxy's 409) is not. The
rounds are fixed in number and every call has a bound, so the test cannot hang or flake.
"""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from functools import partial
from typing import Any

from tests.control.served import (
    LOOPBACK,
    TIMEOUT_S,
    Client,
    Probe,
    Served,
    at_once,
    clients,
    echo_server,
    refused,
    served,
)

CLIENTS = 50
ROUNDS = 3
NOT_FOUND = {"error": "proxy not found", "status": 404}
EXISTS = {"error": "proxy already exists", "status": 409}


def _create(client: Client, name: str, upstream: int) -> tuple[int, Any]:
    body = {"name": name, "listen": f"{LOOPBACK}:0", "upstream": f"{LOOPBACK}:{upstream}"}
    return client.call("POST", "/proxies", body)


def _port(proxy: dict[str, Any]) -> int:
    return int(proxy["listen"].rsplit(":", 1)[1])


def _enabled_ports(client: Client) -> set[int]:
    status, listed = client.call("GET", "/proxies")
    assert status == 200
    return {_port(p) for p in listed.values() if p["enabled"]}


def test_fifty_clients_create_one_name_once_and_delete_it_once() -> None:
    with served() as api, echo_server() as upstream, clients(api, CLIENTS) as pool:
        baseline = api.descriptors()
        for round_ in range(ROUNDS):
            name = f"r{round_}"
            made = at_once([partial(_create, c, name, upstream) for c in pool])
            statuses = Counter(status for status, _ in made)
            assert statuses == {201: 1, 409: CLIENTS - 1}, statuses
            assert all(body == EXISTS for status, body in made if status == 409)
            proxy = next(body for status, body in made if status == 201)
            port = _port(proxy)
            assert api.listening() == {port}  # one listener: no orphan of a losing create
            probe = Probe(port)
            assert probe.ping() == b"ping"

            gone = at_once([partial(c.call, "DELETE", f"/proxies/{name}") for c in pool])
            statuses = Counter(status for status, _ in gone)
            assert statuses == {204: 1, 404: CLIENTS - 1}, statuses
            assert all(body == NOT_FOUND for status, body in gone if status == 404)
            # When the 204 was sent, the listener and the connection were closed already.
            assert api.listening() == set()
            assert probe.ended()
            probe.close()
            assert refused(port, api)
        assert pool[0].call("GET", "/proxies") == (200, {})
        assert api.descriptors() == baseline
        assert api.problems() == []


def _churn(client: Client, seed: int, upstream: int, calls: int) -> Counter[tuple[str, int]]:
    """``calls`` random creates, moves, disables, enables and deletes of three shared names;
    the answers, counted by what was asked and its status."""
    rng = random.Random(seed)
    seen: Counter[tuple[str, int]] = Counter()
    for _ in range(calls):
        name = rng.choice(["a", "b", "c"])
        what = rng.choice(["create", "delete", "disable", "enable", "move", "toxic"])
        if what == "create":
            status, _ = _create(client, name, upstream)
        elif what == "delete":
            status, _ = client.call("DELETE", f"/proxies/{name}")
        elif what == "toxic":
            toxic = {"type": "latency", "attributes": {"latency": 0}, "name": f"t{seed % 2}"}
            status, _ = client.call("POST", f"/proxies/{name}/toxics", toxic)
        else:
            change = {
                "disable": {"enabled": False},
                "enable": {"enabled": True},
                "move": {"listen": f"{LOOPBACK}:0"},
            }[what]
            status, _ = client.call("PATCH", f"/proxies/{name}", change)
        seen[what, status] += 1
    return seen


def _settled(api: Served, client: Client) -> None:
    """The process holds what the API lists: a listener per enabled proxy, nothing more."""
    assert api.listening() == _enabled_ports(client)


def test_fifty_clients_churning_shared_names_leave_exactly_what_the_api_lists() -> None:
    legal = {
        "create": {201, 409},
        "delete": {204, 404},
        "disable": {200, 404},
        "enable": {200, 404},
        "move": {200, 404},
        "toxic": {200, 404, 409},
    }
    with served() as api, echo_server() as upstream, clients(api, CLIENTS) as pool:
        baseline = api.descriptors()
        for round_ in range(ROUNDS):
            work = [
                partial(_churn, c, round_ * CLIENTS + i, upstream, 8) for i, c in enumerate(pool)
            ]
            answers: Counter[tuple[str, int]] = sum(at_once(work), Counter())
            assert all(status in legal[what] for what, status in answers), answers
            assert sum(answers.values()) == CLIENTS * 8
            _settled(api, pool[0])
            probes = [Probe(port) for port in _enabled_ports(pool[0])]
            assert [p.ping() for p in probes] == [b"ping"] * len(probes)
            for name in ("a", "b", "c"):
                assert pool[0].call("DELETE", f"/proxies/{name}")[0] in (204, 404)
            assert all(probe.ended() for probe in probes)
            for probe in probes:
                probe.close()
                assert refused(probe.port, api)
            _settled(api, pool[0])
        assert api.descriptors() == baseline
        assert api.problems() == []


def test_connections_that_leave_before_asking_anything_hold_nothing() -> None:
    """Readiness probes connect and close without a request (Testcontainers polls the port
    so): each such connection is closed once the server reads its end, not a keep-alive
    timeout later. The server notices an end when it reads it, so the check waits for the
    state it expects, within a bound far below that timeout (60 s)."""
    with served() as api:
        baseline = api.descriptors()
        for _ in range(CLIENTS):
            socket.create_connection((LOOPBACK, api.port), TIMEOUT_S).close()
        deadline = time.monotonic() + 10
        while api.descriptors() != baseline and time.monotonic() < deadline:
            time.sleep(0.01)
        assert api.descriptors() == baseline
