"""Seed 001's portable result envelope: a header, chunk frames 1..M, and an integrity trailer.

Every frame is one compact JSON object: no spaces, no CR or LF, UTF-8 with multi-byte characters
kept raw (``ensure_ascii=False``) so that cuts inside a character are exercised::

    {"frame_type":"header","query_hash":"sha256:..","columns":[..],"types":{..}}
    {"frame_type":"chunk","sequence":1,"records":[{"id":"BLI-1",..},..]}     sequences 1..M
    {"frame_type":"trailer","total_records":N,"checksum":"sha256:..","end_token":"EOS_FINALIZED"}

Canonical forms (design decision 1): ``checksum`` is ``"sha256:"`` + hex SHA-256 over each record
id in UTF-8 followed by one LF byte, in stream order; ``query_hash`` is ``"sha256:"`` + hex
SHA-256 of the query text in UTF-8. Both are computed incrementally.

The producer side (``iter_frames``; or ``header_frame``, ``iter_chunks``, ``trailer_frame`` one
by one) makes frames lazily, holding one chunk at a time. The consumer side, ``EnvelopeVerifier``,
checks frames as they arrive in O(1) memory and fails closed (design decision 2):

- ``ERR_ZPARQL_STREAM_TRUNCATED`` is about the end: EOF, RST or timeout before a valid trailer,
  a final frame cut short, or a trailer whose ``end_token`` is not exactly ``EOS_FINALIZED``
  (spec 4.2: a stream that "omits the EOS_FINALIZED trailer").
- ``ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH`` is about content: a frame that does not parse or lacks
  a field, a first frame that is not the header, a second header, a sequence gap, duplicate or
  reorder, a frame after the trailer, or a count or checksum that disagrees with the trailer.

The first violation decides; afterwards every call raises the same code again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final, TypeVar

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.events import Message

END_TOKEN: Final = "EOS_FINALIZED"
DEFAULT_QUERY: Final = "MATCH (n) RETURN n"
COLUMNS: Final = ("id", "title", "priority_tier", "status")

# Titles of 1-, 2-, 3- and 4-byte UTF-8 characters; periods 6 and 4 so the records vary.
_TITLES = (
    "Stream Engine",
    "Café Index",
    "流式 Relay",
    "Backpressure Probe",
    "Résumé Cursor",
    "Trailer Check 🚀",
)
_STATUSES = ("planned", "active", "blocked", "done")

_TRUNCATED = ErrorCode.ERR_ZPARQL_STREAM_TRUNCATED
_MISMATCH = ErrorCode.ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH

_T = TypeVar("_T")


def sha256_tag(data: bytes) -> str:
    """``"sha256:"`` + lowercase hex digest, the envelope's spelling of a hash."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def encode_frame(frame: Mapping[str, object]) -> bytes:
    """One frame as compact UTF-8 JSON (json escapes control characters, so never a raw LF)."""
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class IdDigest:
    """The envelope checksum, one record id at a time: constant size whatever the count."""

    __slots__ = ("_sha", "count")

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.count = 0

    def add(self, record_id: bytes) -> None:
        """Add one id, already encoded as UTF-8."""
        self._sha.update(record_id + b"\n")
        self.count += 1

    @property
    def checksum(self) -> str:
        return "sha256:" + self._sha.hexdigest()


# --- producer side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnvelopeSpec:
    """A result set of ``records`` deterministic records, ``chunk_records`` (B) per chunk."""

    records: int
    chunk_records: int = 50
    query: str = DEFAULT_QUERY

    def __post_init__(self) -> None:
        if self.records < 0 or self.chunk_records < 1:
            raise ValueError(f"need records >= 0 and chunk_records >= 1, got {self}")

    @property
    def chunk_count(self) -> int:
        """M, the number of chunk frames (0 for an empty result)."""
        return -(-self.records // self.chunk_records)

    def record(self, i: int) -> dict[str, str]:
        """Record ``i`` (1-based); its id ``BLI-<i>`` is unique in the result."""
        if not 1 <= i <= self.records:
            raise IndexError(f"record {i} outside 1..{self.records}")
        return {
            "id": f"BLI-{i}",
            "title": _TITLES[(i - 1) % len(_TITLES)],
            "priority_tier": f"P{i % 4}",
            "status": _STATUSES[(i - 1) % len(_STATUSES)],
        }

    def checksum(self) -> str:
        """The trailer checksum of the whole result: O(records) time, O(1) memory."""
        digest = IdDigest()
        for i in range(1, self.records + 1):
            digest.add(f"BLI-{i}".encode())
        return digest.checksum


def header_frame(spec: EnvelopeSpec) -> bytes:
    """The header: query hash, projection columns and their types."""
    return encode_frame(
        {
            "frame_type": "header",
            "query_hash": sha256_tag(spec.query.encode("utf-8")),
            "columns": list(COLUMNS),
            "types": dict.fromkeys(COLUMNS, "string"),
        }
    )


def iter_chunks(spec: EnvelopeSpec) -> Iterator[bytes]:
    """Chunk frames with sequences 1..M, lazily: one chunk of B records in memory at a time.

    A producer puts these through its bounded channel (seed 001: C_cap chunks of B records).
    """
    size = spec.chunk_records
    for sequence in range(1, spec.chunk_count + 1):
        first = (sequence - 1) * size + 1
        last = min(sequence * size, spec.records)
        records = [spec.record(i) for i in range(first, last + 1)]
        yield encode_frame({"frame_type": "chunk", "sequence": sequence, "records": records})


def trailer_frame(total_records: int, checksum: str, end_token: str = END_TOKEN) -> bytes:
    """A trailer with the given values (a fault may pass wrong ones on purpose)."""
    return encode_frame(
        {
            "frame_type": "trailer",
            "total_records": total_records,
            "checksum": checksum,
            "end_token": end_token,
        }
    )


def iter_frames(spec: EnvelopeSpec) -> Iterator[bytes]:
    """Header, chunks 1..M, trailer, lazily. An empty result is header + trailer.

    The trailer certifies the spec's N records, not merely what was yielded: a producer that
    stops early yet still writes this trailer is caught by the count (catalogue case 64).
    """
    yield header_frame(spec)
    yield from iter_chunks(spec)
    yield trailer_frame(spec.records, spec.checksum())


def iter_messages(spec: EnvelopeSpec) -> Iterator[Message]:
    """``iter_frames`` as framing messages."""
    for frame in iter_frames(spec):
        yield Message(frame)


# --- consumer side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnvelopeResult:
    """A verified envelope: how many records, and the hashes that certified them."""

    records: int
    checksum: str
    query_hash: str
    columns: tuple[str, ...]


class _Phase(Enum):
    HEADER = "HEADER"  # nothing yet; the header must come first
    CHUNKS = "CHUNKS"  # header seen; chunks or the trailer may follow
    DONE = "DONE"  # a valid trailer was seen; nothing may follow


class EnvelopeVerifier:
    """Checks an envelope frame by frame, in O(1) memory: records are counted and their ids
    hashed, never stored.

    Feed each whole frame to ``feed``; at a clean end call ``feed_eof`` for the result. When the
    transport broke instead (RST, timeout, the framing said the last frame was cut short), report
    ``truncated()``: every abnormal end maps to ``ERR_ZPARQL_STREAM_TRUNCATED`` through it,
    unless an earlier violation already decided.
    """

    __slots__ = (
        "_column_set",
        "_columns",
        "_digest",
        "_error",
        "_last_sequence",
        "_phase",
        "_query_hash",
        "_total_records",
    )

    def __init__(self) -> None:
        self._phase = _Phase.HEADER
        self._digest = IdDigest()
        self._last_sequence = 0
        self._query_hash = ""
        self._columns: tuple[str, ...] = ()
        self._column_set: frozenset[str] = frozenset()
        self._total_records: int | None = None
        self._error: CodecError | None = None

    @property
    def records_received(self) -> int:
        """Records in the chunks accepted so far."""
        return self._digest.count

    @property
    def last_sequence(self) -> int:
        """Sequence of the last accepted chunk (0 before any)."""
        return self._last_sequence

    @property
    def checksum(self) -> str:
        """The checksum of the ids accepted so far (design decision 1)."""
        return self._digest.checksum

    @property
    def total_records(self) -> int | None:
        """The count the trailer advertised, once a trailer carried one (even a wrong one)."""
        return self._total_records

    @property
    def trailer_seen(self) -> bool:
        """True once a trailer passed every check."""
        return self._phase is _Phase.DONE

    def feed(self, frame: bytes) -> None:
        """Check one whole frame; raise ``CodecError`` at the first violation."""
        self._raise_if_failed()
        try:
            self._accept(_parse(frame))
        except CodecError as err:
            self._error = err
            raise

    def feed_eof(self) -> EnvelopeResult:
        """The stream ended cleanly: the result if a valid trailer was seen, else TRUNCATED."""
        self._raise_if_failed()
        if self._phase is not _Phase.DONE:
            self._error = CodecError(_TRUNCATED, "ended before the trailer", at_boundary=True)
            self._raise_if_failed()
        return EnvelopeResult(
            self._digest.count, self._digest.checksum, self._query_hash, self._columns
        )

    def truncated(
        self, detail: str = "transport broke", *, at_boundary: bool = False
    ) -> CodecError:
        """The error to report for an abnormal end: the first violation if one was already seen,
        else TRUNCATED. The verifier is dead afterwards."""
        if self._error is None:
            self._error = CodecError(_TRUNCATED, detail, at_boundary=at_boundary)
        return _copy(self._error)

    def recovery_predicate(self) -> str:
        """The seed's ``stream_recovery_predicate``, should the stream end now.

        ``NONE`` once verified; ``REFETCH_ALL`` when no chunk was accepted or the content itself
        was rejected (nothing received can be trusted); else ``REFETCH_FROM_SEQUENCE:<k>``, the
        first chunk not yet accepted.
        """
        if self._error is None and self._phase is _Phase.DONE:
            return "NONE"
        rejected = self._error is not None and self._error.code is _MISMATCH
        if rejected or self._last_sequence == 0:
            return "REFETCH_ALL"
        return f"REFETCH_FROM_SEQUENCE:{self._last_sequence + 1}"

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise _copy(self._error)

    def _accept(self, frame: dict[str, object]) -> None:
        kind = frame.get("frame_type")
        if self._phase is _Phase.DONE:
            raise _mismatch(f"{kind!r} frame after the trailer")
        if self._phase is _Phase.HEADER and kind != "header":
            raise _mismatch(f"first frame is {kind!r}, not the header")
        if kind == "header":
            if self._phase is not _Phase.HEADER:
                raise _mismatch("second header")
            self._accept_header(frame)
        elif kind == "chunk":
            self._accept_chunk(frame)
        elif kind == "trailer":
            self._accept_trailer(frame)
        else:
            raise _mismatch(f"unknown frame_type {kind!r}")

    def _accept_header(self, frame: dict[str, object]) -> None:
        query_hash = _field(frame, "query_hash", str)
        columns = _field(frame, "columns", list)
        types = _field(frame, "types", dict)
        names = {c for c in columns if isinstance(c, str)}
        typed = set(types) == names and all(isinstance(t, str) for t in types.values())
        if len(names) != len(columns) or "id" not in names or not typed:
            raise _mismatch("header columns must be unique strings, include id, match types")
        self._query_hash = query_hash
        self._columns = tuple(columns)
        self._column_set = frozenset(names)
        self._phase = _Phase.CHUNKS

    def _accept_chunk(self, frame: dict[str, object]) -> None:
        sequence = _field(frame, "sequence", int)
        if sequence != self._last_sequence + 1:
            raise _mismatch(f"chunk {sequence} after chunk {self._last_sequence}")
        # Check the whole chunk before counting any of it, so a rejected chunk counts for none.
        ids = [self._record_id(r) for r in _field(frame, "records", list)]
        for record_id in ids:
            self._digest.add(record_id)
        self._last_sequence = sequence

    def _record_id(self, record: object) -> bytes:
        if not isinstance(record, dict) or record.keys() != self._column_set:
            raise _mismatch("record without exactly the header's columns")
        record_id = record["id"]
        if not isinstance(record_id, str):
            raise _mismatch("record id is not a string")
        try:
            return record_id.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate smuggled in as a JSON \ud800 escape
            raise _mismatch("record id is not valid Unicode") from None

    def _accept_trailer(self, frame: dict[str, object]) -> None:
        # A trailer without the exact end token is no proof of the end: the stream is truncated.
        if frame.get("end_token") != END_TOKEN:
            raise CodecError(
                _TRUNCATED, "trailer without end_token EOS_FINALIZED", at_boundary=True
            )
        total = self._total_records = _field(frame, "total_records", int)
        checksum = _field(frame, "checksum", str)
        if total != self._digest.count:
            raise _mismatch(f"trailer says {total} records, received {self._digest.count}")
        if checksum != self._digest.checksum:
            raise _mismatch("trailer checksum differs from the received ids")
        self._phase = _Phase.DONE


def _mismatch(detail: str) -> CodecError:
    return CodecError(_MISMATCH, detail, at_boundary=True)


def _copy(err: CodecError) -> CodecError:
    # A fresh exception each time, so re-raising never grows one traceback.
    return CodecError(err.code, err.detail, at_boundary=err.at_boundary)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    frame = dict(pairs)
    if len(frame) != len(pairs):
        raise ValueError("duplicate key")  # ambiguous: which value would a peer have used?
    return frame


def _parse(frame: bytes) -> dict[str, object]:
    try:
        # Decode first: json.loads(bytes) would also accept UTF-16 and UTF-32.
        value = json.loads(frame.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _mismatch(f"frame does not parse: {exc}") from None
    if not isinstance(value, dict):
        raise _mismatch("frame is not a JSON object")
    return value


def _field(frame: dict[str, object], key: str, kind: type[_T]) -> _T:
    value = frame.get(key)
    # bool is an int to Python, never to the envelope.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _mismatch(f"{key!r} missing or not a {kind.__name__}")
    return value
