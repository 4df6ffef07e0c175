"""The recording file format: one exchange through the proxy as JSON lines (pure).

A recording is what ``tearline record`` saw on one connection: every read of the consumer's
request bytes and of the producer's bytes (base64, with the time of the read in milliseconds
since the connection opened), how each side ended, and metadata. Line 1 is the header (format
name and version first), then one record per line in the order they happened, then a trailer
that counts them: a file without its trailer was cut short, and is refused as ``truncated``.
The specification is ``docs/recording-format.md``; a new version changes ``VERSION``.

Reading never trusts the file: every refusal is a ``RecordingError`` (a ``SetupError``) with
the file, the line, the key and a ``Problem`` code, shown as one line.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, NoReturn

from harness.config.limits import MAX_DURATION_MS, MAX_STREAM_BYTES
from harness.errors import KeyPath, PathPart, SetupError
from reference_impl.framing import FRAMING_NAMES
from reference_impl.framing.request import Request
from reference_impl.payload import PAYLOAD_NAMES

FORMAT = "tearline-recording"
VERSION = 2
#: the versions this tearline reads (1 kept no request and no payload settings)
READS = (1, 2)
#: the largest file read: both sides at their limit, base64 (4/3) plus a line per read
MAX_FILE_BYTES = 3 * MAX_STREAM_BYTES
#: how many recordings stay parsed (a sweep replays one file in every case)
CACHED_FILES = 4

Side = Literal["consumer", "producer"]
SIDES: tuple[Side, ...] = ("consumer", "producer")
Ending = Literal["eof", "rst"]
ENDINGS: tuple[Ending, ...] = ("eof", "rst")


class Problem(StrEnum):
    """Why a file was refused (what code decides by; the message is for people)."""

    UNREADABLE = "unreadable"
    TOO_BIG = "too-big"
    NOT_A_RECORDING = "not-a-recording"
    VERSION = "version"
    TRUNCATED = "truncated"
    MALFORMED = "malformed"


class RecordingError(SetupError):
    """A recording that cannot be used: ``file:line: key: message``."""

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        line: int = 0,
        problem: Problem = Problem.MALFORMED,
        path: KeyPath = (),
    ) -> None:
        self.file, self.line, self.problem = file, line, problem
        super().__init__(message, path=path)

    @property
    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        inner = super().text
        return f"{where}: {inner}" if where else inner

    def within(self, *prefix: PathPart) -> RecordingError:
        path = (*prefix, *self.path)
        return RecordingError(
            self.message, file=self.file, line=self.line, problem=self.problem, path=path
        )


@dataclass(frozen=True, slots=True)
class Meta:
    """The header: what was recorded, by whom, when."""

    framing: str
    payload: str
    #: the version of tearline that recorded it
    tearline: str = "unknown"
    #: when the recording started, ISO 8601 in UTC (``2026-05-09T07:35:25.120Z``)
    created: str = ""
    #: the producer's address as given to ``tearline record --upstream``
    upstream: str = ""
    #: the consumer program that made the request (None: the reference consumer, or a
    #: function)
    consumer: tuple[str, ...] | None = None
    #: the consumer function that made it (None: a program or the reference consumer)
    consumer_function: str | None = None
    #: the request the consumer made, before ``{host}`` and ``{port}`` were filled in, its
    #: method resolved (None: a version 1 recording, which kept none)
    request: Request | None = None
    #: the token profile the stream was read as (None: no token stream, or version 1)
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class Read:
    """One read of one side's bytes by the proxy, ``t_ms`` after the connection opened."""

    t_ms: float
    side: Side
    data: bytes


@dataclass(frozen=True, slots=True)
class End:
    """How one side's byte stream ended: FIN (``eof``) or RST (``rst``)."""

    t_ms: float
    side: Side
    how: Ending


Event = Read | End


@dataclass(frozen=True, slots=True)
class Recording:
    meta: Meta
    #: reads and ends in the order they happened (``t_ms`` never decreases)
    events: tuple[Event, ...]

    def reads(self, side: Side) -> list[Read]:
        return [e for e in self.events if isinstance(e, Read) and e.side == side]

    def sent(self, side: Side) -> bytes:
        """Everything ``side`` sent, as one byte string."""
        return b"".join(r.data for r in self.reads(side))

    def end_of(self, side: Side) -> End | None:
        """How ``side`` ended; None: still open when the recording stopped."""
        return next((e for e in self.events if isinstance(e, End) and e.side == side), None)


# -- writing ---------------------------------------------------------------------------------


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=True, allow_nan=False).encode() + b"\n"


def header(meta: Meta) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "framing": meta.framing,
        "payload": meta.payload,
        "tearline": meta.tearline,
        "created": meta.created,
        "upstream": meta.upstream,
        "consumer": None if meta.consumer is None else list(meta.consumer),
        "consumer_function": meta.consumer_function,
        "request": None if meta.request is None else _request(meta.request),
        "profile": meta.profile,
    }


def _request(request: Request) -> dict[str, Any]:
    return {
        "method": request.method,
        "path": request.path,
        "headers": [list(pair) for pair in request.headers],
        "body": base64.b64encode(request.body).decode(),
    }


#: the header's keys in version 1 (no request, no payload settings)
_V1_KEYS = frozenset({"format", "version", "framing", "payload", "tearline", "created"})
_V1_KEYS |= {"upstream", "consumer"}


def _record(event: Event) -> dict[str, Any]:
    t_ms = round(event.t_ms, 3)  # microseconds: finer than any timer a replay keeps
    if isinstance(event, Read):
        return {"t_ms": t_ms, "from": event.side, "data": base64.b64encode(event.data).decode()}
    return {"t_ms": t_ms, "end": event.side, "how": event.how}


def _trailer(recording: Recording) -> dict[str, Any]:
    return {
        "trailer": {
            "records": len(recording.events),
            "consumer_bytes": len(recording.sent("consumer")),
            "producer_bytes": len(recording.sent("producer")),
        }
    }


def dumps(recording: Recording) -> bytes:
    """The file's bytes."""
    lines = [_line(header(recording.meta))]
    lines += [_line(_record(event)) for event in recording.events]
    lines.append(_line(_trailer(recording)))
    return b"".join(lines)


# -- reading ---------------------------------------------------------------------------------


class _Reader:
    """Parses one file's lines, raising RecordingError at the first problem."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.line = 0
        self.sent = {"consumer": 0, "producer": 0}
        self.ended: dict[str, int] = {}
        self.last_t = 0.0

    def fail(self, message: str, problem: Problem = Problem.MALFORMED, *keys: str) -> NoReturn:
        raise RecordingError(message, file=self.file, line=self.line, problem=problem, path=keys)

    def json_line(self, raw: bytes) -> dict[str, Any]:
        try:
            obj = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError) as err:
            self.fail(f"not a JSON line ({err})")
        if not isinstance(obj, dict):
            self.fail(f"expected a JSON object (got {type(obj).__name__})")
        return obj

    def keys(self, obj: dict[str, Any], wanted: set[str]) -> None:
        if set(obj) != wanted:
            extra, missing = sorted(set(obj) - wanted), sorted(wanted - set(obj))
            self.fail(f"expected keys {sorted(wanted)} (missing {missing}, unknown {extra})")

    def meta(self, obj: dict[str, Any]) -> Meta:
        if obj.get("format") != FORMAT:
            self.fail(
                f"not a {FORMAT} file (line 1 has no format {FORMAT!r})", Problem.NOT_A_RECORDING
            )
        version = obj.get("version")
        if isinstance(version, bool) or version not in READS:
            self.fail(
                f"got {version!r}; this tearline reads versions {', '.join(map(str, READS))}",
                Problem.VERSION,
                "version",
            )
        self.keys(obj, set(_V1_KEYS) if version == 1 else set(header(Meta("", ""))))
        for key in ("framing", "payload", "tearline", "created", "upstream"):
            if not isinstance(obj[key], str):
                self.fail("expected a string", Problem.MALFORMED, key)
        self.choice(obj["framing"], FRAMING_NAMES, "framing")
        self.choice(obj["payload"], PAYLOAD_NAMES, "payload")
        consumer = obj["consumer"]
        if consumer is not None and (
            not isinstance(consumer, list) or not all(isinstance(a, str) for a in consumer)
        ):
            self.fail("expected null or a list of strings", Problem.MALFORMED, "consumer")
        function, profile = obj.get("consumer_function"), obj.get("profile")
        for key, value in (("consumer_function", function), ("profile", profile)):
            if value is not None and not isinstance(value, str):
                self.fail("expected null or a string", Problem.MALFORMED, key)
        return Meta(
            obj["framing"],
            obj["payload"],
            obj["tearline"],
            obj["created"],
            obj["upstream"],
            None if consumer is None else tuple(consumer),
            function,
            self.request(obj.get("request")),
            profile,
        )

    def request(self, obj: Any) -> Request | None:
        """The header's request (``method``, ``path``, ``headers``, base64 ``body``)."""
        if obj is None:
            return None
        if not isinstance(obj, dict):
            self.fail("expected null or an object", Problem.MALFORMED, "request")
        self.keys(obj, {"method", "path", "headers", "body"})
        method, path, headers = obj["method"], obj["path"], obj["headers"]
        pairs_ok = isinstance(headers, list) and all(
            isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h)
            for h in headers
        )
        if not (isinstance(method, str) and isinstance(path, str) and pairs_ok):
            message = "method and path: strings; headers: [name, value] pairs"
            self.fail(message, Problem.MALFORMED, "request")
        try:
            body = base64.b64decode(obj["body"], validate=True)
        except (TypeError, ValueError):
            self.fail("expected base64", Problem.MALFORMED, "request", "body")
        return Request(method, path, tuple((n, v) for n, v in headers), body)

    def choice(self, value: str, allowed: tuple[str, ...], key: str) -> None:
        if value not in allowed:
            self.fail(
                f"unknown {key} {value!r} (one of {', '.join(allowed)})", Problem.MALFORMED, key
            )

    def event(self, obj: dict[str, Any]) -> Event:
        t_ms = obj.get("t_ms")
        if isinstance(t_ms, bool) or not isinstance(t_ms, int | float) or not math.isfinite(t_ms):
            self.fail("expected a number of milliseconds", Problem.MALFORMED, "t_ms")
        if not self.last_t <= t_ms <= MAX_DURATION_MS:
            self.fail(
                f"must be within [{self.last_t:g}, {MAX_DURATION_MS:g}] (the records are in "
                f"time order; got {t_ms:g})",
                Problem.MALFORMED,
                "t_ms",
            )
        self.last_t = float(t_ms)
        if "from" in obj:
            return self.read(obj, float(t_ms))
        self.keys(obj, {"t_ms", "end", "how"})
        side = self.side(obj["end"], "end")
        if side in self.ended:
            self.fail(
                f"the {side} ended already (line {self.ended[side]})", Problem.MALFORMED, "end"
            )
        if obj["how"] not in ENDINGS:
            self.fail(f"must be one of {', '.join(ENDINGS)}", Problem.MALFORMED, "how")
        self.ended[side] = self.line
        return End(float(t_ms), side, obj["how"])

    def read(self, obj: dict[str, Any], t_ms: float) -> Read:
        self.keys(obj, {"t_ms", "from", "data"})
        side = self.side(obj["from"], "from")
        if side in self.ended:
            self.fail(f"bytes from the {side} after its end (line {self.ended[side]})")
        text = obj["data"]
        try:
            data = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
        except (binascii.Error, ValueError):
            data = b""
        if not data:
            self.fail("expected non-empty base64", Problem.MALFORMED, "data")
        self.sent[side] += len(data)
        if self.sent[side] > MAX_STREAM_BYTES:
            self.fail(f"the {side} sent over {MAX_STREAM_BYTES >> 20} MiB", Problem.TOO_BIG, "data")
        return Read(t_ms, side, data)

    def side(self, value: object, key: str) -> Side:
        if value == "consumer":
            return "consumer"
        if value == "producer":
            return "producer"
        self.fail("must be consumer or producer", Problem.MALFORMED, key)

    def trailer(self, obj: dict[str, Any], events: int) -> None:
        counts = obj["trailer"]
        wanted = {"records": events, **{f"{s}_bytes": n for s, n in self.sent.items()}}
        if counts != wanted:
            self.fail(
                f"the trailer counts {counts!r}, the file holds {wanted!r}",
                Problem.MALFORMED,
                "trailer",
            )


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number here")


def _lines(data: bytes) -> Iterator[bytes]:
    start = 0
    while start < len(data):
        stop = data.index(b"\n", start)
        yield data[start:stop]
        start = stop + 1


def parse(data: bytes, file: str = "<recording>") -> Recording:
    """The recording in ``data``; raises RecordingError (``file`` names it)."""
    reader = _Reader(file)
    if not data.endswith(b"\n"):
        reader.line = data.count(b"\n") + 1
        what = "the file is empty" if not data else "the last line is cut short"
        reader.fail(f"{what} (no trailer)", Problem.TRUNCATED)
    meta: Meta | None = None
    events: list[Event] = []
    last = data.count(b"\n")
    for number, raw in enumerate(_lines(data), 1):
        reader.line = number
        obj = reader.json_line(raw)
        if meta is None:
            meta = reader.meta(obj)
        elif "trailer" in obj:
            reader.keys(obj, {"trailer"})
            reader.trailer(obj, len(events))
            if number != last:
                reader.line = number + 1
                reader.fail("records after the trailer")
            return Recording(meta, tuple(events))
        else:
            events.append(reader.event(obj))
    reader.fail(f"no trailer after line {last}: the file was cut short", Problem.TRUNCATED)


def read_recording(path: str) -> Recording:
    """The recording at ``path`` (relative: from the current directory); RecordingError if
    it cannot be used. Parsed once per version of the file (its size and modification time)."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise RecordingError(
            f"cannot read: {err.strerror or err}", file=path, problem=Problem.UNREADABLE
        ) from err
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
        raise RecordingError("not a regular file", file=path, problem=Problem.UNREADABLE)
    if info.st_size > MAX_FILE_BYTES:
        raise RecordingError(
            f"{info.st_size} bytes, over the {MAX_FILE_BYTES >> 20} MiB a recording may have",
            file=path,
            problem=Problem.TOO_BIG,
        )
    return _cached(os.path.realpath(path), info.st_mtime_ns, info.st_size, path)


@functools.lru_cache(maxsize=CACHED_FILES)
def _cached(real: str, mtime_ns: int, size: int, shown: str) -> Recording:
    try:
        with open(real, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise RecordingError(
            f"cannot read: {err.strerror or err}", file=shown, problem=Problem.UNREADABLE
        ) from err
    return parse(data, shown)


def recording_problem(path: str, framing: str) -> str | None:
    """Why the recording at ``path`` cannot be the producer of a link of ``framing`` (None: it
    can). Read by the loader, at the edge: the scenario model does no I/O."""
    try:
        recorded = read_recording(path).meta.framing
    except RecordingError as err:
        return f"recording {err.text}"
    if recorded != framing:
        return f"the recording is of framing {recorded}, this link's is {framing}"
    return None
