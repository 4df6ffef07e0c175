"""tearline's API and the real toxiproxy-server, given the same calls: every difference in
their answers, and what each process holds after a race.

Run with ``python -m benchmarks.bench_api_model`` (``--sequences 5 --steps 100`` for a quick
look). Two parts, both servers in their own processes on loopback:

(a) Sequences: ``--sequences`` random sequences of ``--steps`` calls each (every endpoint, on
three shared names; ``tests/control/apimodel.py``'s ``random_op``, seeded 0, 1, ...), sent to
both servers one call at a time. Ports the OS chose are written ``PORT`` and the upstreams
``UP1`` and ``UP2``; then every answer that differs (status or body) is printed with its
call. Each server's answers are also checked against the model, and a call the model cannot
explain is printed.

(b) The race of a parallel test suite: ``--clients`` threads create the same proxy name at
once, then all delete it, ``--rounds`` times: the answers counted, the sockets the process
listens on that no enabled proxy explains (orphans), its open descriptors before and after,
and its sockets in CLOSE-WAIT.

Without ``../shared/anchors/toxiproxy/toxiproxy-server`` (``--toxiproxy PATH``) only
tearline's side is run.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psutil

from benchmarks.bench_proxy_api import TOXIPROXY, serving
from tests.control.apimodel import Model, Op, learn, random_op, step
from tests.control.served import LOOPBACK, Client, at_once, echo_server

PORT = re.compile(r"127\.0\.0\.1:(\d+)")


def normalised(answer: tuple[int, Any], upstreams: dict[str, str]) -> str:
    """The answer with the upstreams named and every port the OS chose written ``PORT`` (the
    OS gives the two servers different ones; whether each server keeps, frees and refuses its
    ports as Toxiproxy does is the model's to check, server by server)."""
    text = repr(answer)
    for real, name in upstreams.items():
        text = text.replace(real, name)
    return PORT.sub(lambda m: f"{LOOPBACK}:{'0' if m.group(1) == '0' else 'PORT'}", text)


def sequence(seed: int, steps: int, upstreams: tuple[str, str]) -> Iterator[Op]:
    """The calls of sequence ``seed``; generated from tearline's model, whatever the servers
    answer (both get the same calls)."""
    rng, model = random.Random(seed), Model()
    for _ in range(steps):
        yield random_op(rng, model, upstreams)


def run_sequences(args: argparse.Namespace, kinds: list[str]) -> None:
    with echo_server() as first, echo_server() as second:
        upstreams = (f"{LOOPBACK}:{first}", f"{LOOPBACK}:{second}")
        names = {upstreams[0]: "UP1", upstreams[1]: "UP2"}
        answers: dict[str, list[list[str]]] = {}
        for kind in kinds:
            with serving(kind, args.toxiproxy) as (_, port):
                answers[kind] = [
                    _answers(kind, Client(port), seed, args.steps, upstreams, names)
                    for seed in range(args.sequences)
                ]
        differences = 0
        if len(kinds) == 2:
            for seed in range(args.sequences):
                ops = list(sequence(seed, args.steps, upstreams))
                pairs = zip(answers["tearline"][seed], answers["toxiproxy"][seed], strict=True)
                for index, (ours, theirs) in enumerate(pairs):
                    if ours != theirs:
                        differences += 1
                        print(f"sequence {seed} call {index}: {ops[index]}")
                        print(f"    tearline  {ours}\n    toxiproxy {theirs}")
        calls = args.sequences * args.steps
        print(f"(a) {args.sequences} sequences x {args.steps} calls: {differences} answers differ")
        print(f"    of {calls} (ports the OS chose written PORT)")


def _answers(
    kind: str,
    client: Client,
    seed: int,
    steps: int,
    upstreams: tuple[str, str],
    names: dict[str, str],
) -> list[str]:
    """Sequence ``seed`` sent to one server (left empty at the end): its answers, normalised;
    a call its model cannot explain is printed."""
    model, out = Model(), []
    for index, op in enumerate(sequence(seed, steps, upstreams)):
        answer = client.call(op.method, op.path, op.body)
        out.append(normalised(answer, names))
        after = step(model, op, answer)
        why = after if isinstance(after, str) else learn(after, client.call("GET", "/proxies")[1])
        if isinstance(after, str) or why:
            print(f"{kind}: sequence {seed} call {index}: the model cannot explain it: {why}")
            model = Model()  # (from a listing the model no longer matches: start again)
            _clear(client)
        else:
            model = after
    _clear(client)
    return out


def _clear(client: Client) -> None:
    for name in client.call("GET", "/proxies")[1]:
        client.call("DELETE", f"/proxies/{name}")


# -- (b) the race --------------------------------------------------------------------------------
def race(kind: str, args: argparse.Namespace) -> str:
    with serving(kind, args.toxiproxy) as (pid, port), echo_server() as upstream:
        process = psutil.Process(pid)
        pool = [Client(port) for _ in range(args.clients)]
        for client in pool:
            client.call("GET", "/version")
        fds_before = process.num_fds()
        created: Counter[int] = Counter()
        deleted: Counter[int] = Counter()
        started = time.perf_counter()
        for round_ in range(args.rounds):
            body = {
                "name": f"r{round_}",
                "listen": f"{LOOPBACK}:0",
                "upstream": f"{LOOPBACK}:{upstream}",
            }
            made = at_once([partial(c.call, "POST", "/proxies", body) for c in pool])
            created.update(status for status, _ in made)
            gone = at_once([partial(c.call, "DELETE", f"/proxies/r{round_}") for c in pool])
            deleted.update(status for status, _ in gone)
        took = time.perf_counter() - started
        listed = pool[0].call("GET", "/proxies")[1]
        enabled = {int(p["listen"].rsplit(":", 1)[1]) for p in listed.values() if p["enabled"]}
        tcp = process.net_connections(kind="tcp")
        listening = {c.laddr.port for c in tcp if c.status == psutil.CONN_LISTEN} - {port}
        close_wait = sum(c.status == psutil.CONN_CLOSE_WAIT for c in tcp)
        fds_after = process.num_fds()
        for client in pool:
            client.close()
    return (
        f"{kind:9} {args.rounds} rounds in {took:.2f} s: creates {dict(sorted(created.items()))}, "
        f"deletes {dict(sorted(deleted.items()))}; {len(listed)} listed, "
        f"{len(listening - enabled)} orphan listener(s), fds {fds_before} -> {fds_after}, "
        f"{close_wait} in CLOSE-WAIT"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sequences", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--toxiproxy", type=Path, default=TOXIPROXY)
    args = parser.parse_args()
    kinds = ["tearline"] + (["toxiproxy"] if args.toxiproxy.exists() else [])
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, load {psutil.getloadavg()[0]:.2f}")
    run_sequences(args, kinds)
    print(f"(b) {args.clients} clients create one name at once, then delete it, each round")
    for kind in kinds:
        print("   ", race(kind, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
