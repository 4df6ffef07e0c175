"""A model of Toxiproxy 2.12's API semantics, read from its Go source (``api.go``,
``proxy.go``, ``proxy_collection.go``, ``toxic_collection.go``), to check a server's answers
against: ``step(model, op, answer)`` is the model after ``op`` if ``answer`` is one that
Toxiproxy could give in that state, else the reason it could not.

What the model cannot know in advance it takes from the answer and checks: the port the OS
gave a proxy listening on ``127.0.0.1:0`` (any port no other proxy holds), and whether a bind
to a fixed port failed because something outside the server held it (the answer is then
Toxiproxy's 500 ``bind: address already in use`` and the proxy is left disabled). An answer
without a body that started proxies on port 0 (``POST /reset``) leaves their ports unknown
(``UNKNOWN``) until a listing shows them (``learn``).

``random_ops`` makes the same kind of sequences from a seed, for the benchmark that runs them
against both servers.
"""

from __future__ import annotations

import copy
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

LOOPBACK = "127.0.0.1"
ANY_PORT = f"{LOOPBACK}:0"
#: a listen whose port the model has not seen yet
UNKNOWN = f"{LOOPBACK}:?"
PROXIES = ("a", "b", "c")
_STARTS = itertools.count(1)
TOXICS = ("t1", "t2")


@dataclass(frozen=True)
class Op:
    method: str
    path: str
    body: Any = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}" + ("" if self.body is None else f" {self.body}")


@dataclass
class Toxic:
    name: str
    type: str
    stream: str
    attributes: dict[str, int]
    toxicity: float = 1.0

    def json(self) -> dict[str, Any]:
        return {
            "attributes": self.attributes,
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
        }


@dataclass
class Proxy:
    name: str
    listen: str
    upstream: str
    enabled: bool
    toxics: list[Toxic] = field(default_factory=list)
    #: which start this is, unique across proxies (a connection lives within one start)
    starts: int = 0

    def ordered(self) -> list[Toxic]:
        """Toxiproxy's order: the upstream chain, then the downstream one, each as added."""
        up = [t for t in self.toxics if t.stream == "upstream"]
        return up + [t for t in self.toxics if t.stream != "upstream"]

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "Logger": {},
            "toxics": [t.json() for t in self.ordered()],
        }

    @property
    def port(self) -> int | None:
        tail = self.listen.rsplit(":", 1)[1]
        return int(tail) if tail.isdigit() else None


@dataclass
class Model:
    proxies: dict[str, Proxy] = field(default_factory=dict)
    #: after a reset that failed partway (Toxiproxy's order is Go's random map order): each
    #: proxy as it was, or as the reset left it, until a listing says which
    choices: dict[str, tuple[Proxy, Proxy]] = field(default_factory=dict)

    def get(self, name: str) -> Proxy | None:
        return self.proxies.get(name)

    def values(self) -> list[Proxy]:
        return list(self.proxies.values())

    def listing(self) -> dict[str, Any]:
        return {name: p.json() for name, p in sorted(self.proxies.items())}


Answer = tuple[int, Any]


class MismatchError(Exception):
    """The answer is not one Toxiproxy could give."""


def error(status: int, text: str) -> dict[str, Any]:
    return {"error": text, "status": status}


def step(model: Model, op: Op, answer: Answer) -> Model | str:
    """The model after ``op`` answered ``answer``, or why Toxiproxy could not answer that."""
    after = copy.deepcopy(model)
    try:
        _apply(after, op, answer)
    except MismatchError as why:
        return f"{op} -> {answer}: {why}"
    return after


def learn(model: Model, listing: dict[str, Any]) -> str | None:
    """Settle what the model left open from a ``GET /proxies`` listing (which of a failed
    reset's outcomes each proxy had, the ports it did not see); then the listing must be the
    model's own (else: why not)."""
    for name, options in model.choices.items():
        fitting = [p for p in options if _fits(p, listing.get(name))]
        if not fitting:
            return f"{name} is listed as {listing.get(name)}, neither of {options}"
        model.proxies[name] = fitting[0]
    model.choices.clear()
    for name, proxy in model.proxies.items():
        shown = listing.get(name)
        if proxy.listen == UNKNOWN and shown is not None:
            try:
                _check_port(model, proxy, shown.get("listen", ""))
            except MismatchError as why:
                return str(why)
            proxy.listen = shown["listen"]
    expected = model.listing()
    return None if listing == expected else f"listed {listing}, the model has {expected}"


def _fits(proxy: Proxy, shown: Any) -> bool:
    if proxy.listen != UNKNOWN:
        return bool(shown == proxy.json())
    return isinstance(shown, dict) and {**shown, "listen": UNKNOWN} == proxy.json()


# -- the endpoints ------------------------------------------------------------------------------
def _apply(model: Model, op: Op, answer: Answer) -> None:
    parts = op.path.strip("/").split("/")
    if parts == ["reset"]:
        return _reset(model, answer)
    if parts == ["populate"]:
        return _populate(model, op.body, answer)
    if parts == ["proxies"]:
        if op.method == "GET":
            return _expect(answer, 200, model.listing())
        return _create(model, op.body, answer)
    proxy = model.get(parts[1])
    if proxy is None:
        return _expect(answer, 404, error(404, "proxy not found"))
    if len(parts) == 2:
        if op.method == "GET":
            return _expect(answer, 200, proxy.json())
        if op.method == "DELETE":
            del model.proxies[proxy.name]
            return _expect(answer, 204, None)
        return _update(model, proxy, op.body, answer)
    if len(parts) == 3:
        if op.method == "GET":
            return _expect(answer, 200, [t.json() for t in proxy.ordered()])
        return _add_toxic(proxy, op.body, answer)
    toxic = next((t for t in proxy.toxics if t.name == parts[3]), None)
    if toxic is None:
        return _expect(answer, 404, error(404, "toxic not found"))
    if op.method == "GET":
        return _expect(answer, 200, toxic.json())
    if op.method == "DELETE":
        proxy.toxics.remove(toxic)
        return _expect(answer, 204, None)
    given = op.body.get("attributes", {})  # decoded into the type's struct: its fields only
    toxic.attributes = {k: given.get(k, v) for k, v in toxic.attributes.items()}
    return _expect(answer, 200, toxic.json())


def _expect(answer: Answer, status: int, body: Any) -> None:
    if answer != (status, body):
        raise MismatchError(f"expected {(status, body)}")


def _create(model: Model, body: dict[str, Any], answer: Answer) -> None:
    if body["name"] in model.proxies:
        return _expect(answer, 409, error(409, "proxy already exists"))
    proxy = Proxy(body["name"], body["listen"], body["upstream"], False)
    if body.get("enabled", True) and not _start(model, proxy, answer, _failed(proxy)):
        return None  # (Toxiproxy adds a proxy only once it listens)
    model.proxies[proxy.name] = proxy
    return _expect(answer, 201, proxy.json())


def _update(model: Model, proxy: Proxy, body: dict[str, Any], answer: Answer) -> None:
    """``Proxy.Update``: a new listen or upstream stops it and takes them; then ``enabled``
    (as given, else as it was before) starts or stops it."""
    wanted = body.get("enabled", proxy.enabled)
    listen, upstream = body.get("listen", proxy.listen), body.get("upstream", proxy.upstream)
    if _resolved(listen) != proxy.listen or upstream != proxy.upstream:
        proxy.enabled = False
        proxy.listen, proxy.upstream = listen, upstream
    if wanted and not proxy.enabled:
        if not _start(model, proxy, answer, _failed(proxy)):
            return None
    elif not wanted:
        proxy.enabled = False
    return _expect(answer, 200, proxy.json())


def _add_toxic(proxy: Proxy, body: dict[str, Any], answer: Answer) -> None:
    stream = body.get("stream", "downstream")
    name = body.get("name") or f"{body['type']}_{stream}"
    if any(t.name == name for t in proxy.toxics):
        return _expect(answer, 409, error(409, "toxic already exists"))
    defaults = {"latency": {"latency": 0, "jitter": 0}, "noop": {}}[body["type"]]
    toxic = Toxic(name, body["type"], stream, {**defaults, **body.get("attributes", {})})
    proxy.toxics.append(toxic)
    return _expect(answer, 200, toxic.json())


def _reset(model: Model, answer: Answer) -> None:
    """Every proxy started and its toxics gone. Toxiproxy goes in Go's random map order and
    stops at the first proxy that fails to start (a fixed port someone holds): then which of
    the others it reached is left to the next listing (``choices``)."""
    before = copy.deepcopy(model.proxies)
    for proxy in model.values():
        if not proxy.enabled:
            proxy.enabled = True
            proxy.starts = next(_STARTS)
            proxy.listen = UNKNOWN if proxy.port == 0 else proxy.listen
        proxy.toxics.clear()
    if answer[0] != 500:
        return _expect(answer, 204, None)
    failing = [p for p in before.values() if not p.enabled and p.port]
    if not any(answer == _failed(p) for p in failing):
        raise MismatchError("a reset may fail only to start a proxy on a fixed port")
    model.choices = {name: (before[name], model.proxies[name]) for name in before}
    return None


def _populate(model: Model, entries: list[dict[str, Any]], answer: Answer) -> None:
    """``AddOrReplace`` for each entry in turn: an existing proxy with the same listen and
    upstream is kept as it is; any other is stopped and replaced by a new one."""
    done: list[dict[str, Any]] = []
    for entry in entries:
        existing = model.get(entry["name"])
        resolved = _resolved(entry["listen"])
        if existing and existing.listen == resolved and existing.upstream == entry["upstream"]:
            done.append(existing.json())
            continue
        if existing:
            existing.enabled = False
        proxy = Proxy(entry["name"], entry["listen"], entry["upstream"], False)
        failure = (500, {**_failed(proxy)[1], "proxies": done or None})
        if entry.get("enabled", True) and not _start(model, proxy, answer, failure):
            return None
        model.proxies[proxy.name] = proxy
        done.append(proxy.json())
    return _expect(answer, 201, {"proxies": done or None})


# -- listening ----------------------------------------------------------------------------------
def _resolved(listen: str) -> str:
    return listen.replace("localhost:", f"{LOOPBACK}:")


def _held(model: Model, port: int, besides: Proxy) -> bool:
    return any(
        p.enabled and p.port == port and p is not besides and p.name != besides.name
        for p in model.values()
    )


def _start(model: Model, proxy: Proxy, answer: Answer, failure: Answer) -> bool:
    """Start ``proxy`` as the answer says it went: True with its port taken from the answer,
    or False when the answer is ``failure``, which a fixed port held by another proxy makes
    certain and one held outside the server makes possible."""
    port = proxy.port
    if port and (_held(model, port, proxy) or answer == failure):
        _expect(answer, *failure)
        proxy.enabled = False
        return False
    if port == 0:
        listed = _listed(answer[1] if isinstance(answer[1], dict) else {}, proxy.name)
        _check_port(model, proxy, listed)
        proxy.listen = listed
    proxy.enabled = True
    proxy.starts = next(_STARTS)
    return True


def _failed(proxy: Proxy) -> Answer:
    """Toxiproxy's answer when ``proxy`` cannot listen on its fixed port."""
    return 500, error(500, f"listen tcp {proxy.listen}: bind: address already in use")


def _listed(shown: dict[str, Any], name: str) -> str:
    """The listen the answer gives for proxy ``name`` (a proxy, or a populate's list)."""
    for entry in [shown, *(shown.get("proxies") or [])]:
        if entry.get("name") == name and "listen" in entry:
            return str(entry["listen"])
    raise MismatchError(f"the answer does not show where {name} listens")


def _check_port(model: Model, proxy: Proxy, listen: str) -> None:
    host, _, tail = listen.rpartition(":")
    if host != LOOPBACK or not tail.isdigit() or int(tail) == 0:
        raise MismatchError(f"{listen!r} is not a port of the loopback")
    if _held(model, int(tail), proxy):
        raise MismatchError(f"{listen} is held by another proxy")


# -- sequences ----------------------------------------------------------------------------------
def random_op(rng: random.Random, model: Model, upstreams: tuple[str, str]) -> Op:
    """One call of every kind the model knows, on a few shared names."""
    name = rng.choice(PROXIES)
    toxic = rng.choice(TOXICS)
    base = f"/proxies/{name}"
    held = [p.listen for p in model.values() if p.enabled and p.port]
    listen = rng.choice([ANY_PORT, ANY_PORT, *held[:1]])
    kind = rng.randrange(14)
    if kind == 0:
        return Op("GET", "/proxies")
    if kind in (1, 2):
        made = {"name": name, "listen": listen, "upstream": rng.choice(upstreams)}
        return Op("POST", "/proxies", made | ({"enabled": False} if rng.random() < 0.2 else {}))
    if kind == 3:
        return Op("DELETE", base)
    if kind == 4:
        return Op("GET", base)
    if kind in (5, 6):
        change = rng.choice(
            [
                {"enabled": False},
                {"enabled": True},
                {"listen": listen},
                {"upstream": rng.choice(upstreams)},
                {"listen": ANY_PORT, "enabled": False},
            ]
        )
        return Op("PATCH", base, change)
    if kind in (7, 8):
        body: dict[str, Any] = {"type": rng.choice(["latency", "noop"])}
        body["stream"] = rng.choice(["upstream", "downstream"])
        if rng.random() < 0.8:
            body["name"] = toxic
        if body["type"] == "latency":
            body["attributes"] = {"latency": 0}
        return Op("POST", f"{base}/toxics", body)
    if kind == 9:
        return Op("PATCH", f"{base}/toxics/{toxic}", {"attributes": {"latency": 1}})
    if kind == 10:
        return Op("DELETE", f"{base}/toxics/{toxic}")
    if kind == 11:
        return Op("GET", f"{base}/toxics")
    if kind == 12:
        return Op("POST", "/reset")
    entries = [{"name": n, "listen": listen, "upstream": upstreams[0]} for n in {name, "c"}]
    return Op("POST", "/populate", sorted(entries, key=lambda e: e["name"]))
