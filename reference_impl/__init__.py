"""Reference link for tearline: sans-IO codecs, the seed guards, and a trio producer/consumer.

Everything but ``producer`` and ``consumer`` is sans-IO: no trio, no sockets
(``tests/test_sans_io.py`` checks every module's imports in a fresh interpreter). Those two touch
the network. ``defaults`` holds the one set of defaults every description of a link uses.
"""
