"""Faults on the path, next to Toxiproxy's toxics in the same run: latency and slicing.

Run with ``python -m benchmarks.bench_faults`` (``--rounds 1 --trips 500`` for a quick look).
Both proxies are driven through the same Toxiproxy HTTP API (``tearline proxy --api`` and
``../shared/anchors/toxiproxy/toxiproxy-server``, skipped when absent), in interleaved rounds;
the clients and upstreams are blocking sockets in threads of this process
(``benchmarks/bench_proxy_api.py``).

(a) Round trip of a 100-byte ping-pong through a proxy with no toxic, a 0 ms latency toxic and
a 10 ms one: median and standard deviation per trip. Goals (issue 10): a 0 ms latency adds at
most 25% to tearline's own pass-through round trip; at 10 ms tearline's median is within
0.2 ms of toxiproxy's and its spread no wider.

(b) Slicing into 64-byte pieces, bulk downstream: MiB/s and us per slice through Toxiproxy's
``slicer`` (average_size 64, size_variation 0, delay 0), tearline's ``slicer`` (the same toxic),
tearline's ``slice`` with ``paced: false`` (pieces written back to back) and the paced
``slice`` (every cut a read boundary the consumer sees; a smaller transfer, it is slow by
design). Goal: the unpaced slice at least as fast as Toxiproxy's slicer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.bench_proxy import ping_pong
from benchmarks.bench_proxy_api import (
    MIB,
    TOXIPROXY,
    Api,
    blaster,
    echo,
    proxy,
    serve_forever,
    server,
    throughput,
)

SLICE_BYTES = 64
LATENCY_ZERO_GOAL = 1.25  # x tearline's pass-through round trip
MEDIAN_GOAL_MS = 0.2  # |tearline - toxiproxy| at 10 ms

Toxic = tuple[str, dict[str, object]]
#: (row, proxies that have it, toxic type and attributes)
RTT_ROWS: tuple[tuple[str, tuple[str, ...], Toxic | None], ...] = (
    ("no toxic", ("tearline", "toxiproxy"), None),
    ("latency 0 ms", ("tearline", "toxiproxy"), ("latency", {"latency": 0})),
    ("latency 10 ms", ("tearline", "toxiproxy"), ("latency", {"latency": 10})),
)
SLICE_ROWS: tuple[tuple[str, tuple[str, ...], Toxic, bool], ...] = (
    ("slicer 64/0/0", ("tearline", "toxiproxy"), ("slicer", {"average_size": SLICE_BYTES}), False),
    ("slice 64, paced false", ("tearline",), ("slice", {"size_bytes": 64, "paced": False}), False),
    ("slice 64, paced", ("tearline",), ("slice", {"size_bytes": SLICE_BYTES}), True),
)


def with_toxic(api: Api, name: str, upstream: int, toxic: Toxic | None) -> int:
    """A proxy called ``name`` in front of ``upstream``, with ``toxic`` downstream if any."""
    port = proxy(api, name, upstream)
    if toxic is not None:
        kind, attributes = toxic
        status, raw = api.call(
            "POST", f"/proxies/{name}/toxics", {"type": kind, "attributes": attributes}
        )
        assert status == 200, raw
    return port


Samples = dict[str, dict[str, list[float]]]  # row -> proxy -> values


def measure_round(kind: str, args: argparse.Namespace, rtt: Samples, slicing: Samples) -> None:
    """One round on one proxy: every row it has, each on a fresh proxy of its own."""
    with server(kind, args.toxiproxy) as api_port:
        api = Api(api_port)
        echoes = serve_forever(echo)
        for n, (row, kinds, toxic) in enumerate(RTT_ROWS):
            if kind in kinds:
                port = with_toxic(api, f"rtt{n}", echoes, toxic)
                rtt.setdefault(row, {}).setdefault(kind, []).extend(ping_pong(port, args.trips))
        for n, (row, kinds, toxic, slow) in enumerate(SLICE_ROWS):
            if kind in kinds:
                size = int((args.paced_kib if slow else args.slice_kib) * 1024)
                port = with_toxic(api, f"slice{n}", serve_forever(blaster(size)), toxic)
                slicing.setdefault(row, {}).setdefault(kind, []).append(throughput(port, size))


def _cell(values: Sequence[float] | None, show: Callable[[Sequence[float]], str]) -> str:
    return show(values) if values else "-"


def report_rtt(rtt: Samples) -> None:
    print("(a) 100-byte round trip: median / sd per trip, us")
    print(f"{'':16} {'tearline':>18} {'toxiproxy':>18} {'median diff':>12} {'sd ratio':>9}")

    def show(values: Sequence[float]) -> str:
        return f"{statistics.median(values) * 1e6:8.1f} / {statistics.stdev(values) * 1e6:7.1f}"

    for row, by in rtt.items():
        ours, theirs = by.get("tearline"), by.get("toxiproxy")
        diff = sd = "-"
        if ours and theirs:
            diff = f"{(statistics.median(ours) - statistics.median(theirs)) * 1e6:+.1f}"
            sd = f"{statistics.stdev(ours) / statistics.stdev(theirs):.2f}"
        print(f"{row:16} {_cell(ours, show):>18} {_cell(theirs, show):>18} {diff:>12} {sd:>9}")
    base, zero = rtt["no toxic"]["tearline"], rtt["latency 0 ms"]["tearline"]
    ratio = statistics.median(zero) / statistics.median(base)
    verdict = "met" if ratio <= LATENCY_ZERO_GOAL else "missed"
    print(f"tearline latency 0 / no toxic: {ratio:.2f} (goal <= {LATENCY_ZERO_GOAL}: {verdict})")
    ten = rtt["latency 10 ms"]
    if "toxiproxy" in ten:
        diff_ms = (statistics.median(ten["tearline"]) - statistics.median(ten["toxiproxy"])) * 1e3
        wider = statistics.stdev(ten["tearline"]) > statistics.stdev(ten["toxiproxy"])
        met = abs(diff_ms) <= MEDIAN_GOAL_MS and not wider
        print(
            f"latency 10 ms: median {diff_ms:+.2f} ms from toxiproxy's, spread "
            f"{'wider' if wider else 'no wider'} (goal within {MEDIAN_GOAL_MS} ms and no wider: "
            f"{'met' if met else 'missed'})"
        )
        iqr_ours, iqr_theirs = _iqr_us(ten["tearline"]), _iqr_us(ten["toxiproxy"])
        print(
            f"latency 10 ms, interquartile range (a spread a few outliers do not move): "
            f"{iqr_ours:.1f} us against {iqr_theirs:.1f} us ({iqr_ours / iqr_theirs:.2f})"
        )


def _iqr_us(values: Sequence[float]) -> float:
    quartiles = statistics.quantiles(values, n=4)
    return (quartiles[2] - quartiles[0]) * 1e6


def report_slicing(slicing: Samples) -> None:
    print(f"(b) {SLICE_BYTES}-byte slices, bulk: MiB/s (us per slice), medians")
    print(f"{'':24} {'tearline':>18} {'toxiproxy':>18} {'x toxiproxy':>12}")

    def show(values: Sequence[float]) -> str:
        mib_s = statistics.median(values)
        return f"{mib_s:7.2f} ({SLICE_BYTES / (mib_s * MIB) * 1e6:6.1f})"

    reference = slicing["slicer 64/0/0"].get("toxiproxy")
    for row, by in slicing.items():
        ours = by.get("tearline")
        ratio = "-"
        if ours and reference:
            ratio = f"{statistics.median(ours) / statistics.median(reference):.2f}"
        cells = (_cell(ours, show), _cell(by.get("toxiproxy"), show))
        print(f"{row:24} {cells[0]:>18} {cells[1]:>18} {ratio:>12}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trips", type=int, default=2000, help="round trips per row and round")
    parser.add_argument("--slice-kib", type=float, default=4096, help="KiB per slicing transfer")
    parser.add_argument("--paced-kib", type=float, default=256, help="KiB for the paced slice")
    parser.add_argument("--toxiproxy", type=Path, default=TOXIPROXY)
    args = parser.parse_args(argv)
    kinds = ["tearline"] + (["toxiproxy"] if args.toxiproxy.exists() else [])
    rtt: Samples = {}
    slicing: Samples = {}
    before = os.getloadavg()
    for _ in range(args.rounds):
        for kind in kinds:
            measure_round(kind, args, rtt, slicing)
    after = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} cores, {args.rounds} round(s), "
        f"load before {before[0]:.1f} after {after[0]:.1f}"
    )
    report_rtt(rtt)
    report_slicing(slicing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
