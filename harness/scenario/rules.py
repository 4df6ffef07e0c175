"""The parsing rules a consumer must get right, each mapped to the library cases that break a
consumer which gets it wrong (pure data; ``tearline rules`` prints it, and fails on a rule the
library has no case for).

A rule belongs to a framing (its specification: WHATWG's event stream, RFC 6455, gRPC over HTTP/2,
NDJSON, the u32 length prefix) or to a payload (seed 001's envelope, seed 002's token streams and
their profiles). ``cases`` are scenario keys (``file-stem::scenario``, every case of it, whatever
its sweep) in which a consumer that gets the rule wrong hands on other messages than were sent,
claims a cut stream complete, or refuses a stream that came whole. A framing rule also names
``boundary`` cases, the same rule with a read boundary inside the rule's own bytes (a CRLF split
between reads inside a multi-line event): a parser that is right on whole input and wrong across
reads is the commonest bug there is. A payload sees whole messages, so its rules need none.

The broken consumers of ``tests/broken/`` prove the mapping for the rules they get wrong
(``tests/test_rule_coverage.py`` runs each against its rule's cases).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

FRAMING_LAYERS = ("sse", "websocket", "grpc", "ndjson", "length-prefixed", "ndjson-http")
PAYLOAD_LAYERS = ("envelope", "tokens")


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of one specification, and the library cases that catch a consumer breaking it."""

    layer: str  # a framing of FRAMING_LAYERS or a payload of PAYLOAD_LAYERS
    name: str
    #: the rule, in one sentence
    says: str
    source: str
    cases: tuple[str, ...]
    #: of the cases, or besides them: the rule with a read boundary inside its bytes
    boundary: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.layer}/{self.name}"

    @property
    def needs_boundary(self) -> bool:
        return self.layer in FRAMING_LAYERS


_SSE = "WHATWG HTML §9.2.6"
RULES: tuple[Rule, ...] = (
    # -- SSE (text/event-stream over HTTP/1.1) ----------------------------------------------
    Rule(
        "sse",
        "multi-line-data",
        "the data lines of one event are joined with LF (the last LF removed)",
        _SSE,
        (
            "event-stream-rules::multi-line-data-chunked",
            "event-stream-rules::field-without-a-colon",
        ),
        (
            "event-stream-rules::multi-line-data-split-at-each-line-feed",
            "event-stream-rules::multi-line-data-crlf-split-between-cr-and-lf",
        ),
    ),
    Rule(
        "sse",
        "one-leading-space",
        "exactly one space after the colon is removed from a value",
        _SSE,
        ("event-stream-rules::one-leading-space-only",),
        ("event-stream-rules::one-leading-space-only-split-after-the-colon",),
    ),
    Rule(
        "sse",
        "line-ends",
        "a line ends at CRLF, at a lone LF or at a lone CR, and nowhere else",
        _SSE,
        (
            "line-endings::cr-line-endings-chunked",
            "line-endings::cr-line-endings-close-delimited",
            "bytes-inserted::stray-cr-before-an-lf",
            "bytes-inserted::stray-cr-between-events",
        ),
        (
            "line-endings::cr-line-endings-read-boundary-between-the-crs",
            "line-endings::crlf-line-endings-split-between-cr-and-lf",
            "event-stream-rules::multi-line-data-crlf-split-between-cr-and-lf",
        ),
    ),
    Rule(
        "sse",
        "byte-order-mark",
        "one U+FEFF at the very start of the stream is removed",
        _SSE,
        ("event-stream-rules::byte-order-mark-and-named-events",),
        ("event-stream-rules::byte-order-mark-comment-event-and-retry-split-inside-them",),
    ),
    Rule(
        "sse",
        "comments",
        "a line starting with a colon is ignored: it neither ends an event nor adds to it",
        _SSE,
        (
            "event-stream-rules::comment-between-data-lines",
            "comments-after-an-id::comment-inside-an-event-chunked",
            "comments-after-an-id::comment-between-events-then-resume",
        ),
        (
            "event-stream-rules::comment-between-data-lines",
            "event-stream-rules::byte-order-mark-comment-event-and-retry-split-inside-them",
        ),
    ),
    Rule(
        "sse",
        "field-without-a-colon",
        "a line without a colon is a field named by the whole line, its value empty",
        _SSE,
        ("event-stream-rules::field-without-a-colon",),
        ("event-stream-rules::field-without-a-colon-split-inside-it",),
    ),
    Rule(
        "sse",
        "event-field",
        "the event field names the event's type; a named event is an event like any other",
        _SSE,
        (
            "event-stream-rules::byte-order-mark-and-named-events",
            "complete-explicit::anthropic",
            "last-event-id-resume::anthropic-events-resume",
        ),
        ("event-stream-rules::named-event-split-inside-the-event-line",),
    ),
    Rule(
        "sse",
        "id-with-a-value",
        "the id is committed at the blank line that dispatches the event, and resumed after",
        f"{_SSE}; §9.2.4 (Last-Event-ID)",
        (
            "last-event-id-resume::undispatched-id-not-committed",
            "last-event-id-resume::cut-inside-event-3",
            "comments-after-an-id::comment-between-events-then-resume",
        ),
        ("event-stream-rules::id-line-split-then-cut-inside-the-event",),
    ),
    Rule(
        "sse",
        "id-without-a-value",
        "an id with an empty value resets the last event id: no Last-Event-ID is sent then",
        f"{_SSE}; §9.2.4",
        ("event-stream-rules::empty-id-resets-the-last-event-id",),
        ("event-stream-rules::empty-id-split-inside-the-id-line",),
    ),
    Rule(
        "sse",
        "retry-and-unknown-fields",
        "retry sets the reconnection time only when all digits; unknown fields are ignored",
        _SSE,
        (
            "event-stream-rules::retry-and-unknown-fields-are-ignored",
            "event-stream-rules::byte-order-mark-and-named-events",
        ),
        ("event-stream-rules::byte-order-mark-comment-event-and-retry-split-inside-them",),
    ),
    Rule(
        "sse",
        "dispatch-at-the-blank-line",
        "an event is dispatched at its blank line; one cut before it is discarded, never handed on",
        f"{_SSE} (pending data at the end of the file is discarded)",
        (
            "incomplete-final-event::cut-inside-last-data-line",
            "incomplete-final-event::blank-line-missing",
            "incomplete-final-event::tokens-cut-inside-last-event",
        ),
        ("read-boundary-everywhere-in-an-event::close-delimited-body",),
    ),
    Rule(
        "sse",
        "chunked-body",
        "a chunked body ends at its last chunk; chunk boundaries are no event boundaries",
        "RFC 9112 §7.1",
        (
            "chunked-terminator-missing::messages-fin-before-terminator",
            "bytes-inserted::junk-after-the-last-chunk",
        ),
        (
            "event-split-across-http-chunks::split-inside-the-data-line",
            "read-boundary-everywhere-in-an-event::chunked-body",
        ),
    ),
    Rule(
        "sse",
        "utf8",
        "the stream is UTF-8 and never repaired; a character may be split across reads",
        f"{_SSE} (always UTF-8); design decision 4",
        ("invalid-utf8-mid-stream::openai",),
        ("event-split-across-http-chunks::split-inside-a-utf8-character",),
    ),
    # -- WebSocket (RFC 6455) -----------------------------------------------------------------
    Rule(
        "websocket",
        "fragmentation",
        "a message is all its fragments, up to the one with FIN set",
        "RFC 6455 §5.4",
        (
            "fragments-reassembled::fragment-sizes",
            "binary-messages::clean-and-fragmented",
            "cut-between-fragments::fin-between-or-inside-fragments",
        ),
        (
            "fragments-reassembled::fragments-read-in-random-pieces",
            "fragments-reassembled::fragments-merged-into-one-read",
        ),
    ),
    Rule(
        "websocket",
        "control-frames",
        "ping frames, between messages or between the fragments of one, are no messages",
        "RFC 6455 §5.4, §5.5.2",
        (
            "frame-rules::ping-inside-a-fragmented-message",
            "ws-pings-during-stall::pings-between-messages",
        ),
        ("frame-rules::ping-inside-a-fragmented-message",),
    ),
    Rule(
        "websocket",
        "close-frame",
        "the stream ends with a close frame; a FIN or RST without one is a cut",
        "RFC 6455 §5.5.1, §7.1.5",
        (
            "close-frame-missing::fin-instead-of-close-frame",
            "close-frame-missing::rst-instead-of-close-frame",
            "frame-rules::close-frame-with-a-one-byte-payload",
        ),
        ("frame-rules::close-frame-split-across-reads",),
    ),
    Rule(
        "websocket",
        "payload-length",
        "the payload length is 7 bits, or 126 and 16 bits, or 127 and 64 bits",
        "RFC 6455 §5.2",
        (
            "cut-inside-frame-header::inside-extended-length",
            "cut-inside-frame-header::after-opcode-byte",
        ),
        ("frame-rules::extended-length-split-across-reads",),
    ),
    Rule(
        "websocket",
        "utf8-text",
        "a text message is valid UTF-8 as a whole; a character may be split by fragments",
        "RFC 6455 §8.1",
        (
            "utf8-across-fragments::invalid-byte-fails-fast",
            "utf8-across-fragments::invalid-byte-in-whole-message",
        ),
        ("utf8-across-fragments::characters-split-by-fragments",),
    ),
    # -- gRPC over HTTP/2 -------------------------------------------------------------------
    Rule(
        "grpc",
        "message-prefix",
        "each message is a 1-byte compressed flag and a u32 big-endian length, then the bytes",
        "grpc PROTOCOL-HTTP2.md (Length-Prefixed-Message)",
        (
            "cut-inside-message-prefix::inside-the-5-byte-prefix",
            "cut-inside-message-prefix::inside-the-data-frame-header",
        ),
        (
            "cut-inside-message-prefix::prefix-split-across-reads",
            "frame-rules::data-frame-header-split-across-reads",
        ),
    ),
    Rule(
        "grpc",
        "compressed-flag",
        "the flag is 0, or 1 only with a negotiated grpc-encoding; anything else is refused",
        "grpc PROTOCOL-HTTP2.md (Compressed-Flag)",
        ("compressed-flag::flag-one-without-encoding", "compressed-flag::flag-two"),
        ("frame-rules::compressed-flag-two-split-after-the-flag",),
    ),
    Rule(
        "grpc",
        "length-limit",
        "a declared length over the limit is refused before any of it is buffered",
        "grpc (max receive message size)",
        ("grpc-bogus-length::length-above-the-limit",),
        ("frame-rules::bogus-length-split-inside-the-length",),
    ),
    Rule(
        "grpc",
        "trailers",
        "the call ends with trailers carrying grpc-status; without them it is cut",
        "grpc PROTOCOL-HTTP2.md (Trailers)",
        (
            "trailers-missing::messages-fin-before-trailers",
            "trailers-missing::messages-fin-inside-trailers",
        ),
        ("frame-rules::trailers-split-across-reads",),
    ),
    # -- NDJSON -------------------------------------------------------------------------------
    Rule(
        "ndjson",
        "lf-separator",
        "only LF separates lines: U+2028, U+2029, NEL, VT and FF are data",
        "ndjson spec; catalogue (str.splitlines)",
        ("unicode-separators-are-data::no-end-marker-framings",),
        ("merged-and-split-lines::split-around-each-line-feed",),
    ),
    Rule(
        "ndjson",
        "crlf-and-blank-lines",
        "a CR right before the LF is part of the line end; a blank line is no value",
        "ndjson spec",
        ("separator-rules::blank-lines-are-no-messages",),
        ("separator-rules::crlf-line-ends-split-between-cr-and-lf",),
    ),
    Rule(
        "ndjson",
        "commit-at-the-line-feed",
        "a line is a message only once its LF came; an unterminated tail is not one",
        "ndjson spec",
        (
            "newline-is-the-commit-point::line-feed-missing",
            "newline-is-the-commit-point::tail-that-parses",
        ),
        ("merged-and-split-lines::three-lines-in-one-read-then-split",),
    ),
    Rule(
        "ndjson",
        "length-limit",
        "a line over the limit is refused before it is whole; the CR of a CRLF is not counted",
        "catalogue cases 12 and 55",
        ("separator-rules::line-exactly-at-the-limit-with-crlf",),
        ("separator-rules::line-over-the-limit-split-across-reads",),
    ),
    # -- NDJSON over HTTP ------------------------------------------------------------------------
    Rule(
        "ndjson-http",
        "content-type",
        "only a 200 answer of content type application/x-ndjson is a stream; another type or "
        "status is an error, never an empty result",
        "RFC 9110 §8.3; catalogue case 35",
        (
            "answers-that-are-no-stream::another-content-type",
            "answers-that-are-no-stream::an-answer-that-is-not-2xx",
        ),
        (
            "answers-that-are-no-stream::content-type-split-across-reads",
            "answers-that-are-no-stream::content-type-split-across-reads-whole",
        ),
    ),
    Rule(
        "ndjson-http",
        "commit-at-the-line-feed",
        "a line is a message only once its LF came, whether the body ends by its last chunk or "
        "by the close",
        "ndjson spec; RFC 9112 §7.1; catalogue cases 15, 16 and 53",
        (
            "line-cut-inside-the-body::cut-inside-a-line",
            "line-cut-inside-the-body::tail-that-parses",
            "line-cut-inside-the-body::line-feed-missing-chunked",
            "line-cut-inside-the-body::line-feed-missing-close-delimited",
        ),
        ("split-inside-each-message::explicit-end-framings",),
    ),
    Rule(
        "ndjson-http",
        "chunk-framing-is-no-line",
        "a chunk's size line and closing CRLF are HTTP, not line bytes: a cut there after a "
        "whole line loses nothing and proves no end",
        "RFC 9112 §7.1; catalogue case 15",
        (
            "cut-in-the-chunk-framing::cut-inside-a-chunk-size-line",
            "cut-in-the-chunk-framing::cut-inside-a-chunks-closing-crlf",
            "cut-in-the-chunk-framing::fin-before-the-last-chunk",
        ),
        ("merge-across-partial-message::explicit-end-framings",),
    ),
    # -- length-prefixed -----------------------------------------------------------------------
    Rule(
        "length-prefixed",
        "u32-prefix",
        "each message is a u32 big-endian length, then that many bytes; 0 is an empty message",
        "catalogue cases 36 and 56",
        ("cut-inside-prefix::inside-the-4-byte-length", "empty-messages::length-prefixed"),
        (
            "cut-inside-prefix::length-split-across-reads",
            "prefix-rules::empty-messages-split-inside-their-prefixes",
        ),
    ),
    Rule(
        "length-prefixed",
        "length-limit",
        "a declared length over the limit is refused before any body byte is buffered",
        "catalogue cases 41 and 55",
        (
            "message-over-the-cap::message-over-the-cap",
            "u32-bogus-length::length-above-the-limit",
            "u32-bogus-length::length-above-a-small-limit",
            "prefix-rules::length-above-a-small-limit-that-the-stream-fills",
        ),
        ("prefix-rules::bogus-length-split-inside-the-length",),
    ),
    Rule(
        "length-prefixed",
        "body-not-committed-early",
        "a message is handed on only when all the bytes its length declares came",
        "catalogue cases 41 and 57",
        (
            "u32-bogus-length::length-beyond-the-stream",
            "expected-size-no-premature-commit::length-prefixed-cut-after-size",
        ),
        ("expected-size-no-premature-commit::body-arrives-late",),
    ),
    # -- the envelope (seed 001) ----------------------------------------------------------------
    Rule(
        "envelope",
        "end-token",
        "the trailer's end_token is exactly EOS_FINALIZED",
        "seed 001 §4.2",
        (
            "end-token-missing-or-misspelled::misspelled-eos-finalized",
            "end-token-missing-or-misspelled::blanked-end-token",
            "end-token-missing-or-misspelled::missing-end-token-field",
        ),
    ),
    Rule(
        "envelope",
        "trailer-required",
        "a stream that stops before its trailer is truncated, never a result",
        "seed 001 §4.2",
        (
            "cut-before-trailer::all-chunks-no-trailer",
            "cut-inside-trailer::halfway-and-inside-end-token",
        ),
    ),
    Rule(
        "envelope",
        "count-compared",
        "total_records is compared with the records received",
        "seed 001 §4.1",
        (
            "count-and-checksum-disagree::total-records-off-by-one-up",
            "count-and-checksum-disagree::total-records-off-by-one-down",
        ),
    ),
    Rule(
        "envelope",
        "checksum-compared",
        "the checksum over the record ids is computed and compared, not only present",
        "seed 001 §4.1; design decision 1",
        (
            "count-and-checksum-disagree::checksum-one-digit-off",
            "corrupt-record-id::one-byte-of-record-3-id",
        ),
    ),
    Rule(
        "envelope",
        "sequence-checked",
        "chunk sequences run 1, 2, 3 ...: a gap, a duplicate or a reorder is refused",
        "seed 001 §4.1; design decision 2",
        (
            "sequence-gap::chunk-2-dropped",
            "sequence-duplicate::chunk-2-twice",
            "sequence-reorder::chunks-2-and-3-swapped",
            "sequence-changed-in-place::sequence-2-reads-3",
        ),
    ),
    Rule(
        "envelope",
        "frame-order",
        "one header first, the trailer last, nothing after it",
        "seed 001 §4.1",
        (
            "frame-order-violations::second-header",
            "frame-order-violations::header-dropped",
            "frame-order-violations::frame-after-trailer",
        ),
    ),
    # -- token streams (seed 002) -----------------------------------------------------------------
    Rule(
        "tokens",
        "exact-signal",
        "the completion signal is the exact sentinel or event, not a prefix or a substring",
        "seed 002 gate 1",
        (
            "signal-rules::done-with-its-last-byte-changed",
            "completion-keywords-in-token-text::done-inside-a-token",
            "completion-keywords-in-token-text::done-inside-an-anthropic-token",
            "completion-keywords-in-token-text::done-inside-a-generic-token",
        ),
    ),
    Rule(
        "tokens",
        "signal-required",
        "a stream that stops before its signal is partial, never complete",
        "seed 002 gates 1 and 3",
        ("silent-truncation-no-signal::openai", "silent-truncation-no-signal::anthropic"),
    ),
    Rule(
        "tokens",
        "length-compared",
        "an advertised length is compared with the tokens received",
        "seed 002 gate 2",
        (
            "frame-faults::openai-more-tokens-than-advertised",
            "frame-faults::openai-fewer-tokens-than-advertised",
            "complete-by-length::length-matches-without-signal",
        ),
    ),
    Rule(
        "tokens",
        "sequence-checked",
        "the generic profile's token sequence numbers run without gap or repeat",
        "seed 002 (generic profile)",
        ("frame-faults::generic-token-dropped", "frame-faults::generic-token-duplicated"),
    ),
    Rule(
        "tokens",
        "nothing-after-the-signal",
        "a frame after the completion signal is refused",
        "seed 002 gate 1",
        (
            "frame-faults::openai-frame-after-the-signal",
            "frame-faults::anthropic-frame-after-the-signal",
            "frame-faults::generic-frame-after-the-signal",
        ),
    ),
    Rule(
        "tokens",
        "ollama-done-reason",
        "the ollama profile's signal is the line with done true and a done_reason; a token-limit "
        "stop (length) is an explicit end, a done without its reason proves nothing",
        "Ollama API /api/chat; design decision 3; catalogue case 25",
        (
            "ollama-done-rules::stopped-by-the-token-limit",
            "ollama-done-rules::done-without-a-done-reason",
            "ollama-done-rules::done-that-is-no-boolean",
            "ollama-done-rules::no-done-line",
        ),
    ),
    Rule(
        "tokens",
        "terminal-event-required",
        "an agent stream that closes cleanly before its terminal event is never complete",
        "seed 002 What Was Observed 1; pydantic-ai #6610",
        ("openai-responses::no-terminal-event", "anthropic-tools::no-terminal-event"),
    ),
    Rule(
        "tokens",
        "in-band-error-typed",
        "an error event after the 200 (response.failed, error, overloaded_error) and a stop at "
        "the output limit are typed errors, nothing handed on",
        "anthropic-sdk-python #688; OpenAI Responses and Anthropic streaming events",
        (
            "in-band-errors::responses-error-before-the-first-delta",
            "in-band-errors::responses-failed-after-partial-text",
            "in-band-errors::anthropic-overloaded-inside-tool-input",
            "openai-responses::max-output-tokens",
            "anthropic-tools::max-tokens",
        ),
    ),
    Rule(
        "tokens",
        "tool-call-whole",
        "a tool call is handed on only whole: a cut or a lost fragment inside its arguments "
        "yields no call",
        "seed 002 What Was Observed 3; anthropic-sdk-python #1470",
        (
            "openai-responses::cut-inside-tool-arguments",
            "anthropic-tools::cut-inside-tool-input",
            "anthropic-tools::tool-input-fragment-dropped",
            "in-band-errors::responses-incomplete-inside-tool-arguments",
        ),
    ),
    Rule(
        "tokens",
        "responses-sequence-checked",
        "a Responses event's sequence_number is the next one: a gap, duplicate or reordering "
        "is refused",
        "OpenAI Responses streaming events (sequence_number)",
        (
            "openai-responses::delta-dropped",
            "openai-responses::delta-duplicated",
            "openai-responses::deltas-reordered",
        ),
    ),
    Rule(
        "tokens",
        "pings-are-not-content",
        "a stall carrying only pings still times out under a content idle timeout; a ping "
        "anywhere else changes nothing",
        "catalogue case 19; Anthropic Messages streaming (ping events)",
        (
            "anthropic-tools::ping-only-stall-times-out",
            "in-band-errors::anthropic-ping-inside-tool-input",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Coverage:
    """One rule against a library: the case ids its ``cases`` and ``boundary`` select."""

    rule: Rule
    cases: tuple[str, ...]
    boundary: tuple[str, ...]
    #: selections of the rule that match no case of the library
    missing: tuple[str, ...]

    @property
    def problem(self) -> str:
        """'' or why the rule is not covered."""
        if self.missing:
            return f"no case for {', '.join(self.missing)}"
        if not self.cases:
            return "no case"
        if self.rule.needs_boundary and not self.boundary:
            return "no case with a read boundary inside the rule's bytes"
        return ""


def scenario_key(case_id: str) -> str:
    """A case id without its sweep values: ``file::scenario``."""
    return case_id.split("[", 1)[0]


@dataclass(frozen=True, slots=True)
class LibraryCase:
    """What the rule table needs of a library case."""

    case_id: str
    framing: str
    payload: str

    def serves(self, rule: Rule) -> bool:
        """The case is over the rule's framing (or carries its payload)."""
        return rule.layer in (self.framing, self.payload)


def coverage(rules: Sequence[Rule], cases: Collection[LibraryCase]) -> list[Coverage]:
    """Each rule with the ids of the library's cases it names, over its framing or payload."""
    by_key: dict[str, list[LibraryCase]] = {}
    for case in cases:
        by_key.setdefault(scenario_key(case.case_id), []).append(case)
    found = []
    for rule in rules:
        named = (*rule.cases, *rule.boundary)
        missing = tuple(k for k in named if not any(c.serves(rule) for c in by_key.get(k, ())))
        found.append(
            Coverage(
                rule, _ids(rule, rule.cases, by_key), _ids(rule, rule.boundary, by_key), missing
            )
        )
    return found


def _ids(rule: Rule, keys: Sequence[str], by_key: dict[str, list[LibraryCase]]) -> tuple[str, ...]:
    return tuple(c.case_id for k in keys for c in by_key.get(k, ()) if c.serves(rule))


def render(found: Sequence[Coverage]) -> str:
    """The table: layer, rule, how many cases (with a read boundary), the first scenario."""
    lines = [f"{'layer':16} {'rule':28} {'cases':>5} {'split':>5}  first scenario / problem"]
    for item in found:
        shown = item.problem or (item.rule.cases[0] if item.rule.cases else "")
        boundary = str(len(item.boundary)) if item.rule.needs_boundary else "-"
        lines.append(
            f"{item.rule.layer:16} {item.rule.name:28} {len(item.cases):5} {boundary:>5}  {shown}"
        )
    uncovered = sum(1 for item in found if item.problem)
    lines.append(f"{len(found)} rules, {uncovered} without the cases they need")
    return "\n".join(lines)
