"""Prometheus metrics of the proxies, read from their connection logs when scraped.

A ``CollectorRegistry`` of its own per server (not prometheus_client's global one), with one
collector that adds up the logs (``events.py``) at scrape time, so the proxies' hot path counts
nothing extra. Families:

- ``tearline_connections_total{proxy}``, ``tearline_connections_open{proxy}``
- ``tearline_sent_bytes_total{proxy,direction}``: bytes written to each direction's destination,
  open connections included
- ``tearline_faults_fired_total{proxy,kind}``: fault applications by kind
- ``toxiproxy_proxy_received_bytes_total`` and ``toxiproxy_proxy_sent_bytes_total``
  ``{direction,proxy,listener,upstream}``: Toxiproxy's own two, for its dashboards (counted,
  as in Toxiproxy, when a connection ends)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from harness.control.events import ConnectionLog

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
DIRECTIONS = ("upstream", "downstream")


@dataclass(frozen=True, slots=True)
class Source:
    """One proxy as the metrics see it."""

    proxy: str
    listener: str
    upstream: str
    log: ConnectionLog


class ProxyCollector:
    def __init__(self, sources: Callable[[], Iterable[Source]]) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        connections = CounterMetricFamily(
            "tearline_connections", "Connections accepted", labels=["proxy"]
        )
        open_now = GaugeMetricFamily(
            "tearline_connections_open", "Connections open now", labels=["proxy"]
        )
        sent = CounterMetricFamily(
            "tearline_sent_bytes",
            "Bytes written towards each direction's destination",
            labels=["proxy", "direction"],
        )
        fired = CounterMetricFamily(
            "tearline_faults_fired", "Fault applications, by fault kind", labels=["proxy", "kind"]
        )
        labels = ["direction", "proxy", "listener", "upstream"]
        t_received = CounterMetricFamily("toxiproxy_proxy_received_bytes", "", labels=labels)
        t_sent = CounterMetricFamily("toxiproxy_proxy_sent_bytes", "", labels=labels)
        for source in self.sources():
            log = source.log
            connections.add_metric([source.proxy], log.totals.connections)
            open_now.add_metric([source.proxy], len(log.open))
            for direction in DIRECTIONS:
                sent.add_metric([source.proxy, direction], log.written(direction))
                where = [direction, source.proxy, source.listener, source.upstream]
                t_received.add_metric(where, log.totals.read[direction])
                t_sent.add_metric(where, log.totals.written[direction])
            for kind, count in sorted(log.fired().items()):
                fired.add_metric([source.proxy, kind], count)
        yield from (connections, open_now, sent, fired, t_received, t_sent)


def registry_for(sources: Callable[[], Iterable[Source]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ProxyCollector(sources))
    return registry


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()
