"""The control API of ``tearline proxy --api``: Toxiproxy's HTTP API over tearline's proxy.

Pure core, thin I/O shell:

- ``gojson.py``: JSON read and written as Toxiproxy's Go server does (its error texts).
- ``toxics.py``, ``toxicity.py``: toxic types and how each becomes a tearline fault.
- ``model.py``: proxy and toxic records, request bodies read into them, JSON shapes, errors.
- ``aims.py``: tearline's aims of a toxic: one connection, one client, from a position on.
- ``bodies.py``: a request body read as a stream to its first JSON value, within a bound.
- ``addresses.py``: listen and upstream addresses as Go reads them; the loopback rule.
- ``routes.py``: Toxiproxy's router and the wire form of its answers; request ids.
- ``api.py``: the endpoints (``ControlApi``), starting and stopping proxies through a
  ``Runner``.
- ``events.py``, ``metrics.py``: per-connection timelines kept for a window; Prometheus.
- (the live locator that finds frames and matches as the stream flows: ``harness/link/live.py``)
- ``harness/api_server/``: the trio shell: the runtime (the one owner of the proxies' table
  and their listeners) and the HTTP server (h11).

``docs/proxy-api.md`` documents the API and every difference from Toxiproxy.
"""
