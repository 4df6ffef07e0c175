"""Reports of a run (``tearline run --report DIR``): one folder a person and a CI job both read.

The renderers are pure (results in, text out): ``html`` (``index.html``, the summary page) and
``details`` (``details/``, the case index and every case's details the page loads on demand),
``junit`` (``junit.xml``), ``results_json`` (``results.json``, schema ``results.schema.json``),
with ``summary`` (totals and labels every report shows alike), ``caseview`` (what the page says
about one case, in full or on demand), ``drawing`` and ``strip`` (the timeline and the sweep
strip, laid out as ``shapes``). ``writer`` is the I/O shell: it reads the scenario sources the
page shows, writes the files, and writes pcaps of both legs of each failing case (``pcap``,
scapy, imported only when a pcap is written). See ``docs/reports.md``.
"""
