"""The API against a model of Toxiproxy's semantics (``apimodel.py``), and the process against
the API: a Hypothesis state machine drives the real command over HTTP with random sequences of
every endpoint, some steps sent by several clients at once, and after every step checks

- each answer against the model (for a step sent at once: some order of its calls explains
  every answer), and the listing against the model;
- the process against the model: it listens on exactly the ports of the enabled proxies; a
  connection kept open through each enabled proxy still echoes and carries exactly the
  proxy's current toxics (its events name the toxics that acted on each byte); a connection
  whose proxy was deleted, disabled, moved or restarted was closed before the answer, and its
  port refuses connections at once (unless a proxy listens there again);
- when no proxy is enabled, the process holds the descriptors it held before the run.

The generated sequences are fixed (``derandomize``); which order racing calls take is chance,
but every assertion holds for every order, so the verdict is not.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tests.control.apimodel import Model, Proxy, learn, random_op, step
from tests.control.served import (
    LOOPBACK,
    Client,
    Probe,
    Served,
    at_once,
    clients,
    echo_server,
    refused,
    served,
)

CLIENTS = 3
#: a probe connection is replaced before its events reach the per-connection bound (100)
MAX_PROBE_RECORDS = 80
SEEDS = st.integers(0, 2**32 - 1)


class World:
    """What every example shares: the server, its clients, the upstreams."""

    def __init__(self, api: Served, pool: list[Client], upstreams: tuple[str, str]) -> None:
        self.api, self.pool, self.upstreams = api, pool, upstreams
        self.baseline = api.descriptors()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with (
        served() as api,
        echo_server() as first,
        echo_server() as second,
        clients(api, CLIENTS) as pool,
    ):
        yield World(api, pool, (f"{LOOPBACK}:{first}", f"{LOOPBACK}:{second}"))


class _Kept:
    """A connection kept open through one start of one proxy."""

    def __init__(self, proxy: Proxy) -> None:
        assert proxy.port
        self.probe = Probe(proxy.port)
        self.starts = proxy.starts
        self.seen = 0  # fault records of it already accounted for


class ApiMachine(RuleBasedStateMachine):
    world: World

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.kept: dict[str, _Kept] = {}
        self.client = self.world.pool[0]

    # -- rules -------------------------------------------------------------------------------
    @rule(seed=SEEDS)
    def one_call(self, seed: int) -> None:
        op = random_op(random.Random(seed), self.model, self.world.upstreams)
        answer = self.client.call(op.method, op.path, op.body)
        after = step(self.model, op, answer)
        assert not isinstance(after, str), after
        self.model = after
        self._settle()

    @rule(seed=SEEDS, count=st.integers(2, CLIENTS))
    def calls_at_once(self, seed: int, count: int) -> None:
        """``count`` calls from different clients at the same moment: some order of them
        explains every answer and the listing after them."""
        rng = random.Random(seed)
        ops = [random_op(rng, self.model, self.world.upstreams) for _ in range(count)]
        ops = [op for op in ops if op.path != "/reset"] or ops[:1]
        pool = self.world.pool
        calls = [partial(c.call, o.method, o.path, o.body) for c, o in zip(pool, ops, strict=False)]
        answers = at_once(calls)
        listing = self.client.call("GET", "/proxies")[1]
        reasons = []
        for order in itertools.permutations(range(len(ops))):
            model: Model | str = self.model
            for index in order:
                assert not isinstance(model, str)
                model = step(model, ops[index], answers[index])
                if isinstance(model, str):
                    break
            if isinstance(model, str):
                reasons.append(model)
            elif (why := learn(model, listing)) is None:
                self.model = model
                self._settle(listing)
                return
            else:
                reasons.append(why)
        raise AssertionError(f"no order of {[str(o) for o in ops]} explains {answers}: {reasons}")

    # -- after every step ------------------------------------------------------------------
    def _settle(self, listing: dict[str, Any] | None = None) -> None:
        if listing is None:
            listing = self.client.call("GET", "/proxies")[1]
        assert (why := learn(self.model, listing)) is None, why
        enabled = {p.name: p for p in self.model.values() if p.enabled}
        assert self.world.api.listening() == {p.port for p in enabled.values()}
        for name, kept in list(self.kept.items()):
            proxy = enabled.get(name)
            if proxy is None or proxy.starts != kept.starts:
                self._ended(name, kept)
        for proxy in enabled.values():
            self._carries_its_toxics(proxy)
        for client in self.world.pool:  # (each keeps its connection: none idles out)
            assert client.call("GET", "/version")[0] == 200

    def _ended(self, name: str, kept: _Kept) -> None:
        """Its proxy was stopped: the connection was closed before the answer, and nothing
        listens on its port now unless a proxy does again."""
        del self.kept[name]
        assert kept.probe.ended(), f"a connection through stopped proxy {name} still open"
        kept.probe.close()
        if kept.probe.port not in self.world.api.listening():
            assert refused(kept.probe.port, self.world.api)

    def _carries_its_toxics(self, proxy: Proxy) -> None:
        """One ping through the kept connection: echoed, and every latency toxic of the proxy
        acted on it once in its own stream (a noop does nothing to record)."""
        kept = self.kept.get(proxy.name)
        if kept is None or kept.seen > MAX_PROBE_RECORDS:
            if kept is not None:
                kept.probe.close()
            kept = self.kept[proxy.name] = _Kept(proxy)
        assert kept.probe.ping() == b"ping"
        status, events = self.client.call("GET", f"/proxies/{proxy.name}/events")
        assert status == 200
        mine = [e for e in events if e["client"] == kept.probe.client and e["closed"] is None]
        assert len(mine) == 1, (kept.probe.client, events)
        records = mine[0]["faults"][kept.seen :]
        kept.seen += len(records)
        acted = Counter((r["direction"], r["toxic"]) for r in records)
        expected = Counter(
            ("upstream" if t.stream == "upstream" else "downstream", t.name)
            for t in proxy.toxics
            if t.type == "latency"
        )
        assert acted == expected, (proxy.name, acted, expected)

    @invariant()
    def no_descriptor_is_left_when_no_proxy_runs(self) -> None:
        if not any(p.enabled for p in self.model.values()):
            assert self.world.api.descriptors() == self.world.baseline

    def teardown(self) -> None:
        """Everything deleted (even after a failure: the next example starts clean), then
        the connections were closed and the process holds what it held at the start."""
        deleted = [self.client.call("DELETE", f"/proxies/{n}")[0] for n in self.model.proxies]
        ended = [kept.probe.ended() for kept in self.kept.values()]
        for kept in self.kept.values():
            kept.probe.close()
        assert deleted == [204] * len(deleted)
        assert all(ended)
        assert self.world.api.listening() == set()
        assert self.world.api.descriptors() == self.world.baseline
        assert self.world.api.problems() == []


def test_the_api_follows_toxiproxys_model_and_the_process_follows_the_api(world: World) -> None:
    ApiMachine.world = world
    run_state_machine_as_test(
        ApiMachine,
        settings=settings(
            max_examples=20,
            stateful_step_count=25,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
