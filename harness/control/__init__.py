"""The control API of ``tearline proxy --api``: Toxiproxy's HTTP API over tearline's proxy.

Pure core, thin I/O shell:

- ``gojson.py``: JSON read and written as Toxiproxy's Go server does (its error texts).
- ``toxics.py``, ``toxicity.py``: toxic types and how each becomes a tearline fault.
- ``model.py``: proxy and toxic records, request bodies read into them, JSON shapes, errors.
- ``addresses.py``: listen and upstream addresses as Go reads them; the loopback rule.
- ``routes.py``: Toxiproxy's router and the wire form of its answers; request ids.
- ``api.py``: the endpoints (``ControlApi``), starting and stopping proxies through a
  ``Runner``.
- ``events.py``, ``metrics.py``: per-connection timelines kept for a window; Prometheus.
- ``live.py``: a locator that finds frames and matches in a stream as it flows.
- ``runtime.py``, ``asgi.py``: the trio shell: proxies' listeners, Starlette on Hypercorn.

``docs/proxy-api.md`` documents the API and every difference from Toxiproxy.
"""
