"""The broken consumers, one module per bug, and the command that runs each one.

Each module is a complete consumer program (``python -m tests.broken.<module>``) speaking the
consumer contract, with one realistic bug; its ``FRAMINGS`` and ``PAYLOADS`` say which links it
speaks, as a team's own consumer would (tearline runs it only on scenarios over those, like
``tearline run --framing ... --payload ...``).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

#: bug name -> (module, what the bug is)
BUGS: dict[str, tuple[str, str]] = {
    "every-read-is-a-message": ("every_read", "treats every read as a message"),
    "accepts-tail-at-eof": ("tail_at_eof", "accepts whatever it has at end of stream"),
    "ignores-trailer": ("ignores_trailer", "ignores the trailer"),
    "skips-checksum": ("skips_checksum", "skips the checksum"),
    "stale-buffer-across-reconnect": (
        "stale_buffer",
        "keeps a stale partial buffer across a reconnect",
    ),
    "repairs-invalid-utf8": ("repairs_utf8", "repairs invalid UTF-8 silently"),
    "commits-before-size": ("commits_early", "commits before the expected size arrives"),
    "ignores-sequence": ("ignores_sequence", "ignores sequence numbers"),
    "never-times-out": ("no_timeout", "never times out a partial message"),
    "sse-read-per-event": ("sse_per_read", "parses each SSE read separately"),
    "ws-piece-is-a-message": ("ws_pieces", "takes each WebSocket frame piece for a message"),
    "termination-is-completion": (
        "termination_completes",
        "takes the end of the connection for the end of the answer",
    ),
    "splitlines": ("splitlines", "splits NDJSON with str.splitlines"),
    "trusts-any-length": ("trusts_length", "trusts any declared length"),
}


@dataclass(frozen=True, slots=True)
class BrokenConsumer:
    name: str
    module: str
    bug: str
    framings: tuple[str, ...]
    payloads: tuple[str, ...]

    @property
    def command(self) -> str:
        """The ``--consumer`` command (run from the repository root)."""
        return f"{sys.executable} -m tests.broken.{self.module}"

    def speaks(self, framing: str, payload: str) -> bool:
        return framing in self.framings and payload in self.payloads


def broken_consumers() -> list[BrokenConsumer]:
    """Every broken consumer, in ``BUGS`` order."""
    out = []
    for name, (module, bug) in BUGS.items():
        loaded = importlib.import_module(f"tests.broken.{module}")
        out.append(BrokenConsumer(name, module, bug, loaded.FRAMINGS, loaded.PAYLOADS))
    return out
