"""Reference link for tearline: sans-IO codecs, the seed guards, and a trio producer/consumer.

Everything under ``reference_impl.framing``, ``reference_impl.payload`` and the two guard modules is
sans-IO (no trio import; ``tests/test_sans_io.py`` enforces it). Only ``producer``, ``consumer`` and
``net`` touch the network.
"""
