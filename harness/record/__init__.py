"""Record and replay: one exchange through the proxy, kept in a file, played back as a producer.

- ``format.py`` (pure): the recording file format, its reader and writer (docs/recording-format.md).
- ``plan.py`` (pure): when a replay writes what (the recorded timing, scaled).
- ``recorder.py``, ``replay.py``, ``capture.py``: the I/O shell (``tearline record``, the
  replay producer, the pcap of a recording).

This package imports nothing on its own, so the pure modules stay free of trio.
"""
