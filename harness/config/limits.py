"""Upper bounds of every number a scenario or a fault may hold, checked when it is loaded.

A number past these is a mistake (``records: 10^30``, ``size_bytes: 2^63``), not a test: each
bound is what a 2-core, 24 GiB machine runs within a case's deadline, with room to spare. The
bounds are documented in ``docs/scenario-format.md`` (section "Limits").
"""

from __future__ import annotations

#: durations, delays, timeouts, deadlines and time positions: 10 minutes
MAX_DURATION_MS = 600_000.0
#: the default bound on a consumer's start-up (a program's, until the proxy accepts its first
#: connection), which the case's deadline does not count: a machine loaded to ten times its
#: cores took up to 10 s to start an interpreter and import a client library
STARTUP_MS = 30_000.0
#: byte offsets and byte sizes inside one stream: 1 GiB
MAX_BYTES = 1 << 30
#: frame indices, character indices and other counts of things in one stream
MAX_COUNT = 10_000_000
#: messages of a ``messages`` payload, records of an envelope, tokens of a token stream. The
#: reference codecs make the whole stream once before a case's deadline starts (and ``validate``
#: may too), at about 50-150 us a message here (2 cores, loaded): 100,000 is 5-15 s.
MAX_MESSAGES = 100_000
#: bytes of one generated message, and the largest message a codec may be told to accept
MAX_MESSAGE_BYTES = 64 << 20
#: bytes of the whole stream a recording holds on one side (kept in memory to replay): 256 MiB
MAX_STREAM_BYTES = 256 << 20
#: bytes of the messages a scenario's payload makes (``count x size_bytes``, or the ``texts``
#: together): generated text costs about 1.5-3 us a byte to make and frame, so 16 MiB is
#: 25-45 s here under load; the stream is made before each case's deadline starts.
MAX_PAYLOAD_BYTES = 16 << 20
#: WebSocket fragments of the whole stream (``ws_fragment_bytes`` against the payload's size)
MAX_FRAGMENTS = 100_000
#: rates, in bytes per second: 10 GB/s is faster than loopback
MAX_RATE_BYTES_PER_S = 10_000_000_000
#: how much faster than recorded a replay may play (``link.producer.speed``)
MAX_REPLAY_SPEED = 1000.0
#: faults of one scenario (or of a ``tearline proxy --faults`` file): every piece of the stream
#: goes through every fault, and each fault may cut it into more pieces, so the cost grows with
#: the square of their number (20,000 splits ran for minutes past a case's deadline)
MAX_FAULTS = 100
#: reconnects of one case
MAX_RECONNECTS = 1_000
#: seeds: 64-bit
MAX_SEED = (1 << 64) - 1
