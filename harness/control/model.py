"""The control API's records and how request bodies become them: pure, tested without sockets.

- ``ProxyRecord``, ``ToxicRecord``: what the API shows (``as_json``, Toxiproxy's shapes and
  field order: ``"Logger":{}`` in every proxy, ``attributes`` first in every toxic) and what
  the proxies run (``ProxyRecord.faults``: each toxic's tearline fault by name, upstream
  toxics first, each stream in the order its toxics were added).
- ``read_proxy``, ``read_update``, ``read_populate``, ``new_toxic``, ``updated_toxic``: a body
  read as Toxiproxy reads it, with its checks in its order and its error texts; the result, or
  ``ApiError`` carrying the status and the text.

Where Toxiproxy is careless tearline is not, with the same status codes and error bodies:
attribute values out of range are refused (400, with the attribute's key path), a failed
update changes nothing (Toxiproxy applies part of it), and a proxy's framing (a tearline
extension) lets toxics use frame positions. tearline's other extensions: a proxy's body may
carry its ``toxics`` (created with it, in one request), and a toxic may be aimed at one
connection, one client or a position of its stream (``aims.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from harness.control.aims import NO_AIMS, Aims, member, read_aims
from harness.control.gojson import (
    BOOL,
    F32,
    FLOAT32,
    STRING,
    GoJsonError,
    Obj,
    Struct,
    Value,
    parse,
    unmarshal,
)
from harness.control.toxicity import Sometimes
from harness.control.toxics import (
    TOXIPROXY_TYPES,
    default_attributes,
    is_type,
    tearline_fault,
    toxiproxy_fault,
)
from harness.errors import ErrorKind, FieldError, HarnessError, KeyPath
from harness.faults.config import Fault
from harness.faults.items import Direction
from harness.link.live import LinkTraits, LiveStream
from harness.link.locator import placement_problem
from reference_impl.framing import FRAMING_NAMES

#: Toxiproxy answers 200 for a new toxic, 201 for a new proxy or a populate
CREATED = 201


class ApiError(HarnessError):
    """A request the API refuses: ``status`` (Toxiproxy's code) and the text of its ``error``."""

    code = ErrorKind.FIELD

    def __init__(self, message: str, status: int = 400, *, path: KeyPath = ()) -> None:
        super().__init__(message, path=path)
        self.status = status

    def within(self, *prefix: str | int) -> ApiError:
        return ApiError(self.message, self.status, path=(*prefix, *self.path))

    def body(self) -> dict[str, Any]:
        return {"error": self.text, "status": self.status}


def bad_body(err: GoJsonError) -> ApiError:
    return ApiError(f"bad request body: {err.text}")


# -- Go structs the bodies are read into --------------------------------------------------------
LOGGER = Struct("zerolog.Logger")
PROXY_FIELDS: tuple[tuple[str, str | Struct], ...] = (
    ("name", STRING),
    ("listen", STRING),
    ("upstream", STRING),
    ("enabled", BOOL),
    ("Logger", LOGGER),
    # tearline's extension: what the stream is, for frame positions and heartbeats
    ("framing", STRING),
    ("payload", STRING),
)
PROXY = Struct("toxiproxy.Proxy", PROXY_FIELDS, frozenset({"Logger"}))
POPULATE_ITEM = Struct(
    'struct { toxiproxy.Proxy; Enabled *bool "json:\\"enabled\\"" }',
    PROXY_FIELDS,
    frozenset({"Logger"}),
)
POPULATE_ITEM_ANON = replace(POPULATE_ITEM, name="")  # Go names its fields ".enabled"
NOOP = Struct("toxics.NoopToxic")


def _wrapper(attributes: Struct) -> Struct:
    return Struct(
        "toxics.ToxicWrapper",
        (
            ("name", STRING),
            ("type", STRING),
            ("stream", STRING),
            ("toxicity", FLOAT32),
            ("attributes", attributes),
        ),
    )


def _update_struct(attributes: Struct) -> Struct:
    return Struct("", (("attributes", attributes), ("toxicity", FLOAT32)))


# -- records ----------------------------------------------------------------------------------
@dataclass(slots=True)
class ToxicRecord:
    name: str
    type: str
    #: the stream as the client spelled it (Toxiproxy echoes ``UpStream``)
    stream: str
    toxicity: float
    #: Toxiproxy's integer attributes in their order, or a tearline fault's fields as given
    attributes: dict[str, Any]
    #: what the proxy runs (None: ``noop``)
    fault: Fault | None
    #: tearline's: which connection, client or position on (``aims.py``)
    aims: Aims = NO_AIMS

    @property
    def direction(self) -> Direction:
        return "upstream" if self.stream.lower() == "upstream" else "downstream"

    def as_json(self) -> dict[str, Any]:
        return {
            "attributes": self.attributes,
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": F32(self.toxicity),
            **self.aims.shown(),
        }


@dataclass(slots=True)
class ProxyRecord:
    name: str
    listen: str
    upstream: str
    enabled: bool = True
    toxics: list[ToxicRecord] = field(default_factory=list)
    framing: str = ""
    payload: str = ""
    #: tearline: how many times the proxy was started (seeds differ between runs)
    starts: int = 0
    #: a populate entry listed its toxics (a proxy it keeps then takes them)
    toxics_given: bool = False

    def ordered_toxics(self) -> list[ToxicRecord]:
        """Upstream toxics first, then downstream ones, each in the order they were added."""
        return [t for t in self.toxics if t.direction == "upstream"] + [
            t for t in self.toxics if t.direction == "downstream"
        ]

    def toxic(self, name: str) -> ToxicRecord | None:
        return next((t for t in self.toxics if t.name == name), None)

    def faults(self) -> list[tuple[str, Fault]]:
        return [(t.name, t.fault) for t in self.ordered_toxics() if t.fault is not None]

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "Logger": {},
            "toxics": [t.as_json() for t in self.ordered_toxics()],
        }
        if self.framing:
            shown["framing"] = self.framing
        if self.payload:
            shown["payload"] = self.payload
        return shown


# -- proxies ----------------------------------------------------------------------------------
def _decode(body: bytes, struct: Struct) -> dict[str, Any]:
    try:
        return unmarshal(parse(body), struct)
    except GoJsonError as err:
        raise bad_body(err) from None


PAYLOADS = ("messages", "envelope", "tokens")


def check_framing(framing: str, payload: str = "") -> None:
    """tearline's extension fields: a known framing and payload, or none."""
    if framing and framing not in FRAMING_NAMES:
        known = ", ".join(FRAMING_NAMES)
        raise ApiError(f"unknown framing {framing!r} (expected one of {known})", path=("framing",))
    if payload and payload not in PAYLOADS:
        known = ", ".join(PAYLOADS)
        raise ApiError(f"unknown payload {payload!r} (expected one of {known})", path=("payload",))


def read_proxy(body: bytes) -> ProxyRecord:
    """A ``POST /proxies`` body, checked in Toxiproxy's order (decode, name, upstream), then
    tearline's ``toxics``: the proxy's toxics, created with it (any error: nothing is)."""
    try:
        value = parse(body)
    except GoJsonError as err:
        raise bad_body(err) from None
    given = _unmarshal(value, PROXY)
    record = ProxyRecord(
        name=given.get("name", ""),
        listen=given.get("listen", ""),
        upstream=given.get("upstream", ""),
        enabled=given.get("enabled", True),
        framing=given.get("framing", ""),
        payload=given.get("payload", ""),
    )
    if not record.name:
        raise ApiError("missing required field: name")
    if not record.upstream:
        raise ApiError("missing required field: upstream")
    check_framing(record.framing, record.payload)
    add_toxics(record, member(value, "toxics"))
    return record


def add_toxics(record: ProxyRecord, toxics: Value | None) -> None:
    """A proxy body's ``toxics`` (a list of toxic bodies) onto ``record``; ``ApiError`` with
    the toxic's index in its key path (``toxics[1].attributes.rate: ...``)."""
    if toxics is None:
        return
    if not isinstance(toxics, list):
        raise ApiError("must be a list of toxics", path=("toxics",))
    for index, item in enumerate(toxics):
        try:
            record.toxics.append(toxic_from(record, item))
        except ApiError as err:
            raise err.within("toxics", index) from None


def _unmarshal(value: Value, struct: Struct) -> dict[str, Any]:
    try:
        return unmarshal(value, struct)
    except GoJsonError as err:
        raise bad_body(err) from None


def read_update(body: bytes, current: ProxyRecord) -> ProxyRecord:
    """A ``POST|PATCH /proxies/{name}`` body over the current values (the name stays)."""
    given = _decode(body, PROXY)
    changed = replace(
        current,
        listen=given.get("listen", current.listen),
        upstream=given.get("upstream", current.upstream),
        enabled=given.get("enabled", current.enabled),
        framing=given.get("framing", current.framing),
        payload=given.get("payload", current.payload),
        toxics=current.toxics,
    )
    check_framing(changed.framing, changed.payload)
    return changed


def read_populate(body: bytes) -> list[ProxyRecord]:
    """A ``POST /populate`` body: every entry checked before anything is done. An entry's
    ``toxics`` (tearline's) are its toxics; ``toxics_given`` says an entry had the key."""
    try:
        value = parse(body)
    except GoJsonError as err:
        raise bad_body(err) from None
    if value is None:
        return []
    if not isinstance(value, list):
        kind = "object" if isinstance(value, Obj) else _kind_name(value)
        raise ApiError(
            f"bad request body: json: cannot unmarshal {kind} into Go value of type "
            f"[]{POPULATE_ITEM.name}"
        )
    records: list[ProxyRecord] = []
    toxics: list[Value | None] = []
    first_error: ApiError | None = None
    for item in value:
        try:
            given = unmarshal(item, POPULATE_ITEM_ANON) if isinstance(item, Obj) else {}
        except GoJsonError as err:
            first_error = first_error or bad_body(err)
            continue
        if item is not None and not isinstance(item, Obj):
            text = (
                f"json: cannot unmarshal {_kind_name(item)} into Go value of type "
                f"{POPULATE_ITEM.name}"
            )
            first_error = first_error or ApiError(f"bad request body: {text}")
            continue
        records.append(
            ProxyRecord(
                name=given.get("name", ""),
                listen=given.get("listen", ""),
                upstream=given.get("upstream", ""),
                enabled=given.get("enabled", True),
                framing=given.get("framing", ""),
                payload=given.get("payload", ""),
            )
        )
        toxics.append(member(item, "toxics"))
    if first_error is not None:
        raise first_error
    for number, (record, listed) in enumerate(zip(records, toxics, strict=True), 1):
        if not record.name:
            raise ApiError(f"missing required field: name at proxy {number}")
        if not record.upstream:
            raise ApiError(f"missing required field: upstream at proxy {number}")
        check_framing(record.framing, record.payload)
        try:
            add_toxics(record, listed)
        except ApiError as err:
            raise ApiError(f"{err.text} at proxy {number}", err.status) from None
        record.toxics_given = listed is not None
    return records


def _kind_name(value: Value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Obj):
        return "object"
    return "number"


# -- toxics -----------------------------------------------------------------------------------
def _raw_attributes(value: Value) -> Obj | None:
    """The ``attributes`` member of a toxic body (keys matched as Go matches them)."""
    if not isinstance(value, Obj):
        return None
    exact = [v for k, v in value.items if k == "attributes"]
    found = exact or [v for k, v in value.items if k.casefold() == "attributes"]
    last = found[-1] if found else None
    return last if isinstance(last, Obj) else None


def _toxic_fault(
    proxy: ProxyRecord,
    toxic_type: str,
    raw: Obj | None,
    attributes: dict[str, Any],
    direction: Direction,
    toxicity: float,
) -> tuple[dict[str, Any], Fault | None]:
    """The toxic's attributes as shown and its fault (wrapped for its toxicity)."""
    try:
        if toxic_type in TOXIPROXY_TYPES:
            fault = toxiproxy_fault(TOXIPROXY_TYPES[toxic_type], attributes, direction)
            shown = attributes
        else:
            fault, shown = tearline_fault(toxic_type, raw, direction)
            traits = LinkTraits((proxy.framing or None) if direction == "downstream" else None)
            if problem := placement_problem(fault, LiveStream(traits)):
                raise FieldError(
                    f"{problem.message}; give the proxy a framing for frame positions",
                    path=problem.path,
                )
    except FieldError as err:
        raise ApiError(err.message, path=("attributes", *err.path)) from None
    return shown, None if fault is None else Sometimes(fault, toxicity)


def new_toxic(proxy: ProxyRecord, body: bytes) -> ToxicRecord:
    """A ``POST /proxies/{name}/toxics`` body (``toxic_from``)."""
    try:
        value = parse(body)
    except GoJsonError as err:
        raise bad_body(err) from None
    return toxic_from(proxy, value)


def toxic_from(proxy: ProxyRecord, value: Value) -> ToxicRecord:
    """A toxic body, checked in Toxiproxy's order: decode, stream, name, type, duplicate name,
    attributes (then tearline's ranges and aims)."""
    given = _unmarshal(value, _wrapper(NOOP))
    stream = given.get("stream", "downstream")
    if stream.lower() not in ("upstream", "downstream"):
        raise ApiError("stream was invalid, can be either upstream or downstream")
    toxic_type = given.get("type", "")
    name = given.get("name", "") or f"{toxic_type}_{stream}"
    if not is_type(toxic_type):
        raise ApiError("invalid toxic type")
    if proxy.toxic(name) is not None:
        raise ApiError("toxic already exists", 409)
    attributes = default_attributes(toxic_type)
    if toxic_type in TOXIPROXY_TYPES:
        typed = _wrapper(TOXIPROXY_TYPES[toxic_type].go_struct)
        attributes.update(_unmarshal(value, typed).get("attributes", {}))
    toxicity = given.get("toxicity", 1.0)
    direction: Direction = "upstream" if stream.lower() == "upstream" else "downstream"
    raw = _raw_attributes(value)
    shown, fault = _toxic_fault(proxy, toxic_type, raw, attributes, direction, toxicity)
    try:
        aims = read_aims(value, proxy.framing if direction == "downstream" else "")
    except FieldError as err:
        raise ApiError(err.message, path=err.path) from None
    wrapped = None if fault is None else aims.wrap(fault)
    return ToxicRecord(name, toxic_type, stream, toxicity, shown, wrapped, aims)


def updated_toxic(proxy: ProxyRecord, toxic: ToxicRecord, body: bytes) -> ToxicRecord:
    """A ``POST|PATCH /proxies/{p}/toxics/{t}`` body: attributes merged over the current ones,
    toxicity kept when absent; name, type and stream never change. A body that fails changes
    nothing (Toxiproxy keeps the attributes it decoded before the error)."""
    typed = TOXIPROXY_TYPES.get(toxic.type)
    struct = typed.go_struct if typed else Struct(f"toxics.{toxic.type}")
    try:
        value = parse(body)
        given = unmarshal(value, _update_struct(struct))
    except GoJsonError as err:
        raise bad_body(err) from None
    toxicity = given.get("toxicity", toxic.toxicity)
    raw: Obj | None = None
    if typed:
        attributes = {**toxic.attributes, **given.get("attributes", {})}
    else:
        merged: dict[str, Value] = {}
        for key, item in _as_obj(toxic.attributes).items:
            merged[key] = item
        update = _raw_attributes(value)
        for key, item in update.items if update else ():
            merged[key] = item
        raw = Obj(tuple(merged.items()))
        attributes = {}
    direction = toxic.direction
    shown, fault = _toxic_fault(proxy, toxic.type, raw, attributes, direction, toxicity)
    wrapped = None if fault is None else toxic.aims.wrap(fault)
    return replace(toxic, toxicity=toxicity, attributes=shown, fault=wrapped)


def _as_obj(data: dict[str, Any]) -> Obj:
    """Plain attributes back into a parsed object (to merge an update over them)."""
    value = parse(json.dumps(data))
    assert isinstance(value, Obj)
    return value
