"""``tearline hunt`` on every broken consumer: cases until the first failure, the shrunk plan,
seconds, and the hunt's cases per second.

Run from the repository root with ``python -m benchmarks.bench_hunt`` (``--only splitlines``
for one consumer, ``--only reference`` for the reference program, ``--budget 50`` for a quick
look). Each broken consumer of
``tests/broken/catalogue.py`` is hunted on the first link it speaks, framings in the order
ndjson, length-prefixed, sse, websocket, grpc and payloads in the order messages, envelope,
tokens (so the cheapest framings first), with a fixed seed and budget and no example database
(so nothing a past run found is replayed first). The hunt is the command's own (``Hunt`` with
``LiveCheck``: every plan against the in-process reference consumer, then the consumer
program), graded as ``tearline run`` grades a foreign consumer; a consumer the graded hunt does
not catch is hunted again with ``--strict`` (any difference from the reference's conclusion),
and the row says so.

The reference consumer run as a program (``tearline consume`` with every contract setting) is
hunted the same way, on ``--reference-links``: it must be caught by nothing.

Printed: the Markdown table for ``docs/hunt.md`` (consumer, link, mode, cases until the first
failure, faults, the shrunk plan in one line, seconds), the date and the load average, and the
throughput: plans and cases (a plan is one or two cases: the reference's, then the consumer's
unless the reference run already decided) per second over all hunts.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from harness.hunt.diagnosis import Judged
from harness.hunt.plan import Hunted, Plan, describe
from harness.search.engine import Hunt, HuntResult, HuntSettings
from harness.search.strategies import Space
from harness.search.trials import LiveCheck, preflight
from reference_impl.framing import FramingName
from reference_impl.payload import PayloadName
from tests.broken.catalogue import broken_consumers

FRAMING_ORDER = ("ndjson", "length-prefixed", "sse", "websocket", "grpc")
PAYLOAD_ORDER = ("messages", "envelope", "tokens")
REFERENCE = "reference (tearline consume)"
REFERENCE_COMMAND = (
    f"{sys.executable} -m harness.cli consume --connect {{host}}:{{port}} --framing {{framing}}"
    " --payload {payload} --profile {profile}"
    " --incomplete-message-timeout-ms {incomplete_message_timeout_ms}"
    " --idle-timeout-ms {idle_timeout_ms} --max-reconnects {max_reconnects}"
    " --accept-partial-at-safe-boundary {accept_partial_at_safe_boundary}"
    " --max-message-bytes {max_message_bytes} --sse-body {sse_body} --json"
)


@dataclass(frozen=True, slots=True)
class Row:
    consumer: str
    link: str
    mode: str
    result: HuntResult
    cases: int  # cases run (reference and consumer runs)
    seconds: float

    def markdown(self) -> str:
        found = self.result.found
        if not found:
            return (
                f"| {self.consumer} | {self.link} | {self.mode} | none in {self.result.cases} "
                f"| - | - | {self.seconds:.0f} |"
            )
        first = found[0]
        plan = describe(first.plan).replace("|", "\\|")
        return (
            f"| {self.consumer} | {self.link} | {self.mode} | {first.cases_until} "
            f"| {len(first.plan.faults)} | {plan} | {first.seconds:.0f} |"
        )


def first_link(framings: Sequence[str], payloads: Sequence[str]) -> tuple[str, str]:
    framing = next(f for f in FRAMING_ORDER if f in framings)
    payload = next(p for p in PAYLOAD_ORDER if p in payloads)
    return framing, payload


class Counting:
    """A check that counts the cases it runs."""

    def __init__(self, check: LiveCheck) -> None:
        self.live, self.cases = check, 0

    def __call__(self, plan: Plan) -> Judged:
        judged = self.live.check(plan)
        self.cases += 1 if judged.consumer is None else 2
        return judged


def hunt(
    name: str, command: str, link: tuple[str, str], args: argparse.Namespace, *, strict: bool
) -> Row:
    space = Space(FramingName(link[0]), PayloadName(link[1]))
    live = LiveCheck(Hunted(command=tuple(shlex.split(command))), args.seed, strict=strict)
    started = time.monotonic()
    clean = preflight(live, space)
    if clean.problem:
        raise SystemExit(f"{name}: {clean.problem}")
    check = Counting(live)
    settings = HuntSettings(seed=args.seed, budget=args.budget, shrink_budget=args.shrink_budget)
    result = Hunt(space, check, settings).run()
    mode = "strict" if strict else "graded"
    seconds = time.monotonic() - started
    row = Row(name, "/".join(link), mode, result, check.cases + 2, seconds)
    print(row.markdown(), flush=True)
    for found in result.found:  # not table rows: what the failure was, for the notes
        diagnosis = " ".join(found.judged.diagnosis.split())[:200]
        print(f"  {found.key} ({found.shrink_steps} shrink steps): {diagnosis}", flush=True)
    for problem in result.reference_problems:
        print(f"  reference problem {problem.key}: {describe(problem.plan)}", flush=True)
    return row


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--shrink-budget", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME")
    parser.add_argument(
        "--reference-links",
        nargs="*",
        default=["ndjson/messages", "sse/envelope"],
        metavar="FRAMING/PAYLOAD",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONPATH", os.getcwd())  # python -m tests.broken.<module>
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    print(f"budget {args.budget}, seed {args.seed}, shrink budget {args.shrink_budget}")
    print("| consumer | link | mode | cases until the first failure | faults | shrunk plan | s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows: list[Row] = []
    for broken in broken_consumers():
        if args.only and broken.name not in args.only and broken.module not in args.only:
            continue
        link = first_link(broken.framings, broken.payloads)
        row = hunt(broken.name, broken.command, link, args, strict=False)
        rows.append(row)
        if not row.result.found:
            rows.append(hunt(broken.name, broken.command, link, args, strict=True))
    if not args.only or "reference" in args.only:
        for text in args.reference_links:
            framing, payload = text.split("/")
            rows.append(hunt(REFERENCE, REFERENCE_COMMAND, (framing, payload), args, strict=True))
    plans = sum(r.result.runs + 1 for r in rows)
    cases = sum(r.cases for r in rows)
    seconds = sum(r.seconds for r in rows)
    load = ", ".join(f"{x:.1f}" for x in (*load_before, *os.getloadavg()))
    print(
        f"\n{started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load average before/after {load}"
    )
    print(
        f"{plans} plans, {cases} cases in {seconds:.0f} s: {plans / seconds:.2f} plans/s, "
        f"{cases / seconds:.2f} cases/s"
    )


if __name__ == "__main__":
    main()
