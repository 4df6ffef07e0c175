"""Recordings (pure): one exchange through the proxy, as a file and as a replay's schedule.

- ``format.py``: the recording file format, its reader and writer (docs/recording-format.md).
- ``schedule.py``: when a replay writes what (the recorded timing, scaled).
- ``adapt.py``: what a replay changes in the recorded bytes so that a live client takes them.

The shell that records and plays back is ``harness.running`` (``recorder.py``,
``replay.py``); the pcap of a recording is ``harness.artifacts.capture``.
"""
