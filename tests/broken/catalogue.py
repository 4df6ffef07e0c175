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
    "keeps-abandoned-attempt": (
        "keeps_abandoned",
        "keeps the abandoned attempt's messages after a restart and appends the replay",
    ),
    "appends-replay-twice": ("replay_twice", "appends a reconnect's replay to the result twice"),
    "loses-resume-message": ("loses_resume", "loses the message at the resume point"),
    "sse-joins-data-lines": (
        "sse_rules joins-data-lines",
        "joins the lines of a multi-line SSE data without LF",
    ),
}
#: consumers that are right, fail-closed where the reference is bold: caught by no case
CORRECT: dict[str, tuple[str, str]] = {
    "refuses-after-proof": (
        "cautious",
        "refuses a result the payload proved when the framing's end then does not come",
    ),
}
#: the consumer settings a broken consumer honours when the contract passes them (its module's
#: ``HONOURS`` adds to these); a case that sets any other is not asked of it
HONOURED = frozenset(
    {"incomplete_message_timeout_ms", "idle_timeout_ms", "accept_partial_at_safe_boundary"}
)


@dataclass(frozen=True, slots=True)
class BrokenConsumer:
    name: str
    #: the module, and its argument if it takes one (``sse_rules joins-data-lines``)
    module: str
    bug: str
    framings: tuple[str, ...]
    payloads: tuple[str, ...]
    #: the consumer settings it honours (``HONOURED`` and its module's ``HONOURS``)
    honours: frozenset[str] = HONOURED

    @property
    def command(self) -> str:
        """The ``--consumer`` command (run from the repository root)."""
        return f"{sys.executable} -m tests.broken.{self.module}"

    def speaks(self, framing: str, payload: str) -> bool:
        return framing in self.framings and payload in self.payloads


def _consumers(table: dict[str, tuple[str, str]]) -> list[BrokenConsumer]:
    out = []
    for name, (module, bug) in table.items():
        loaded = importlib.import_module(f"tests.broken.{module.split()[0]}")
        honours = HONOURED | frozenset(getattr(loaded, "HONOURS", ()))
        out.append(BrokenConsumer(name, module, bug, loaded.FRAMINGS, loaded.PAYLOADS, honours))
    return out


def broken_consumers() -> list[BrokenConsumer]:
    """Every broken consumer, in ``BUGS`` order."""
    return _consumers(BUGS)


def correct_consumers() -> list[BrokenConsumer]:
    """The consumers that are right in their own way (``CORRECT``): graded ``failed`` nowhere."""
    return _consumers(CORRECT)
