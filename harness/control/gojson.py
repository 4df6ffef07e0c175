"""JSON as Toxiproxy's Go server reads and writes it: pure, so clients see the same texts.

Toxiproxy decodes request bodies with Go's ``encoding/json`` ``Decoder`` and its clients show
the resulting error text (``bad request body: unexpected EOF``). This module reproduces the
parts of it that the API's bodies reach:

- ``parse(text)``: the first JSON value of a body, or ``GoJsonError`` with Go's text: ``EOF``
  for an empty body, ``unexpected EOF`` for one that stops partway, ``invalid character 'b'
  looking for beginning of object key string`` for a syntax error. Bytes after the first value
  are ignored (Go's ``Decoder`` reads one value). Objects keep their keys in order, repeats
  included (``Obj``); numbers keep their literal (``Num``), because Go's messages quote it.
- ``Struct`` / ``unmarshal``: a value decoded into a described Go struct, Go's way: keys match
  the field names exactly or else case-insensitively, the last repeat wins, unknown keys and
  ``null`` values are skipped, and the first type mismatch is reported as Go words it
  (``json: cannot unmarshal string into Go struct field Proxy.enabled of type bool``).
- ``encode(value)``: JSON as Go's encoder writes it: no spaces, ``<``, ``>``, ``&``, U+2028 and
  U+2029 escaped, float32 numbers in their shortest form (``0.33333334``, ``1e-7``).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Union

#: Go's float32 range (``strconv.ParseFloat(s, 32)`` fails past it)
MAX_FLOAT32 = 3.4028234663852886e38
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class GoJsonError(ValueError):
    """A body Go's decoder refuses; ``text`` is Go's error text, without the API's prefix."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass(frozen=True, slots=True)
class Num:
    """A JSON number, as written (``100.0`` stays ``100.0``: Go quotes it in errors)."""

    text: str

    @property
    def value(self) -> float:
        return float(self.text)


@dataclass(frozen=True, slots=True)
class Obj:
    """A JSON object: its members in order, a repeated key as often as it was written."""

    items: tuple[tuple[str, Value], ...] = ()

    def get(self, key: str) -> Value | None:
        """The last value under exactly ``key`` (None when absent or null)."""
        found: Value | None = None
        for name, value in self.items:
            if name == key:
                found = value
        return found


Value = Union[None, bool, str, Num, Obj, list["Value"]]  # noqa: UP007 - a recursive alias


# -- parsing ----------------------------------------------------------------------------------
_SPACES = re.compile(r"[ \t\r\n]*")
#: a run of string characters that need no attention (no quote, backslash or control byte)
_PLAIN_RUN = re.compile(r'[^"\\\x00-\x1f]+')


def _quote_char(char: str) -> str:
    """A character as Go's scanner quotes it in an error (``'b'``, ``'\\''``, ``'\\x01'``)."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
        return "'" + escapes.get(char, f"\\x{code:02x}") + "'"
    return f"'{char}'"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, context: str) -> GoJsonError:
        if self.at >= len(self.text):
            return GoJsonError("unexpected EOF")
        return GoJsonError(f"invalid character {_quote_char(self.text[self.at])} {context}")

    def skip_space(self) -> None:
        found = _SPACES.match(self.text, self.at)
        assert found is not None  # (``*`` matches the empty run)
        self.at = found.end()

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def value(self) -> Value:
        self.skip_space()
        char = self.peek()
        if char == "{":
            return self.obj()
        if char == "[":
            return self.array()
        if char == '"':
            return self.string()
        if char == "-" or char.isdigit():
            return self.number()
        for word, result in (("true", True), ("false", False), ("null", None)):
            if char == word[0]:
                return self.literal(word, result)
        raise self.fail("looking for beginning of value")

    def literal(self, word: str, result: Value) -> Value:
        for index, expected in enumerate(word):
            if self.peek() != expected:
                if index == 0:
                    raise self.fail("looking for beginning of value")
                raise self.fail(f"in literal {word} (expecting {_quote_char(expected)})")
            self.at += 1
        return result

    def obj(self) -> Obj:
        self.at += 1
        items: list[tuple[str, Value]] = []
        self.skip_space()
        if self.peek() == "}":
            self.at += 1
            return Obj(())
        while True:
            self.skip_space()
            if self.peek() != '"':
                raise self.fail("looking for beginning of object key string")
            key = self.string()
            self.skip_space()
            if self.peek() != ":":
                raise self.fail("after object key")
            self.at += 1
            items.append((key, self.value()))
            self.skip_space()
            char = self.peek()
            self.at += 1
            if char == ",":
                continue
            if char == "}":
                return Obj(tuple(items))
            self.at -= 1
            raise self.fail("after object key:value pair")

    def array(self) -> list[Value]:
        self.at += 1
        items: list[Value] = []
        self.skip_space()
        if self.peek() == "]":
            self.at += 1
            return items
        while True:
            items.append(self.value())
            self.skip_space()
            char = self.peek()
            self.at += 1
            if char == ",":
                continue
            if char == "]":
                return items
            self.at -= 1
            raise self.fail("after array element")

    def string(self) -> str:
        self.at += 1
        out: list[str] = []
        text = self.text
        while True:
            if run := _PLAIN_RUN.match(text, self.at):  # the whole run at once: a 50 MB
                out.append(run.group())  # string is one match, not 50 million steps
                self.at = run.end()
            if self.at >= len(text):
                raise self.fail("in string literal")
            char = text[self.at]
            if char == '"':
                self.at += 1
                return "".join(out)
            if char == "\\":
                out.append(self.escape())
                continue
            if ord(char) < 0x20:
                raise self.fail("in string literal")
            out.append(char)
            self.at += 1

    def escape(self) -> str:
        self.at += 1
        char = self.peek()
        simple = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n"}
        simple |= {"r": "\r", "t": "\t"}
        if char in simple and char:
            self.at += 1
            return simple[char]
        if char != "u":
            raise self.fail("in string escape code")
        self.at += 1
        code = self.hex4()
        if 0xD800 <= code < 0xDC00 and self.text.startswith("\\u", self.at):
            mark = self.at
            self.at += 2
            low = self.hex4()
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
            self.at = mark
        return "\ufffd" if 0xD800 <= code < 0xE000 else chr(code)

    def hex4(self) -> int:
        digits = ""
        for _ in range(4):
            char = self.peek()
            if not char or char not in "0123456789abcdefABCDEF":
                raise self.fail("in \\u hexadecimal character escape")
            digits += char
            self.at += 1
        return int(digits, 16)

    def number(self) -> Num:
        start = self.at
        if self.peek() == "-":
            self.at += 1
        if not self.peek().isdigit():
            raise self.fail("in numeric literal")
        if self.peek() == "0":
            self.at += 1
        else:
            self.digits()
        if self.peek() == ".":
            self.at += 1
            if not self.peek().isdigit():
                raise self.fail("after decimal point in numeric literal")
            self.digits()
        if self.peek() in ("e", "E"):
            self.at += 1
            if self.peek() in ("+", "-"):
                self.at += 1
            if not self.peek().isdigit():
                raise self.fail("in exponent of numeric literal")
            self.digits()
        return Num(self.text[start : self.at])

    def digits(self) -> None:
        while self.peek().isdigit() and self.peek().isascii():
            self.at += 1


def parse(body: bytes | str) -> Value:
    """The first JSON value of ``body`` (see the module docstring); ``GoJsonError`` if none."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    parser = _Parser(text)
    parser.skip_space()
    if parser.at >= len(text):
        raise GoJsonError("EOF")
    return parser.value()


# -- decoding into Go structs -----------------------------------------------------------------
#: Go type names, as the messages spell them
STRING, BOOL, INT64, INT, FLOAT32 = "string", "bool", "int64", "int", "float32"


@dataclass(frozen=True, slots=True)
class Struct:
    """A Go struct type: its name as Go prints it (``Proxy``, ``toxics.LatencyToxic``; ``""``
    for an anonymous struct) and its JSON fields in order, each a Go scalar type name or a
    nested ``Struct`` (``ignored`` fields are decoded for their type only)."""

    name: str
    fields: tuple[tuple[str, str | Struct], ...] = ()
    ignored: frozenset[str] = field(default_factory=frozenset)

    @property
    def short(self) -> str:
        """The name without its package, as in ``Go struct field Proxy.name``."""
        return self.name.rsplit(".", 1)[-1]


def _kind(value: Value) -> str:
    """What Go calls a JSON value in ``cannot unmarshal X into ...``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Num):
        return "number"
    if isinstance(value, Obj):
        return "object"
    return "array"


@dataclass
class _Decoding:
    first_error: str | None = None

    def mismatch(self, what: str, struct: Struct, path: Sequence[str], gotype: str) -> None:
        if self.first_error is None:
            where = f"{struct.short}.{'.'.join(path)}"
            self.first_error = (
                f"json: cannot unmarshal {what} into Go struct field {where} of type {gotype}"
            )


def unmarshal(value: Value, struct: Struct) -> dict[str, Any]:
    """``value`` decoded into ``struct``: the fields given (not null), by their Go names, with
    nested structs as dicts; ``GoJsonError`` with Go's text for the first type mismatch.

    A top-level value that is not an object is refused as Go refuses it (``json: cannot
    unmarshal array into Go value of type toxiproxy.Proxy``); ``null`` decodes to nothing."""
    if value is None:
        return {}
    if not isinstance(value, Obj):
        raise GoJsonError(
            f"json: cannot unmarshal {_kind(value)} into Go value of type {struct.name}"
        )
    state = _Decoding()
    decoded = _struct(value, struct, (), state, struct)
    if state.first_error is not None:
        raise GoJsonError(state.first_error)
    return decoded


def _field_for(name: str, struct: Struct) -> tuple[str, str | Struct] | None:
    for declared in struct.fields:
        if declared[0] == name:
            return declared
    folded = name.casefold()
    for declared in struct.fields:
        if declared[0].casefold() == folded:
            return declared
    return None


def _struct(
    obj: Obj, struct: Struct, path: tuple[str, ...], state: _Decoding, outer: Struct
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items:
        found = _field_for(key, struct)
        if found is None or value is None:
            continue
        name, gotype = found
        # Go names the innermost struct being decoded with the whole field path.
        where = (*path, name)
        if isinstance(gotype, Struct):
            if isinstance(value, Obj):
                decoded = _struct(value, gotype, where, state, gotype)
                if name in struct.ignored:
                    continue
                previous = out.get(name)
                merged = dict(previous) if isinstance(previous, dict) else {}
                merged.update(decoded)
                out[name] = merged
            else:
                state.mismatch(_kind(value), struct, where, gotype.name)
            continue
        scalar = _scalar(value, gotype)
        if scalar is _MISMATCH:
            what = _kind(value)
            if isinstance(value, Num) and gotype in (INT64, INT, FLOAT32):
                what = f"number {value.text}"
            state.mismatch(what, struct, where, gotype)
            continue
        if name not in struct.ignored:
            out[name] = scalar
    return out


_MISMATCH = object()


def _scalar(value: Value, gotype: str) -> object:
    if gotype == STRING:
        return value if isinstance(value, str) else _MISMATCH
    if gotype == BOOL:
        return value if isinstance(value, bool) else _MISMATCH
    if not isinstance(value, Num):
        return _MISMATCH
    if gotype in (INT64, INT):
        if not value.text.lstrip("-").isdigit():
            return _MISMATCH  # 1.5, 100.0 and 1e3 are not Go integers
        number = int(value.text)
        return number if INT64_MIN <= number <= INT64_MAX else _MISMATCH
    number_f = value.value
    if math.isinf(number_f) or abs(number_f) > MAX_FLOAT32:
        return _MISMATCH
    return float32(number_f)


# -- encoding ---------------------------------------------------------------------------------
def float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (as Go stores a toxicity)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def format_float32(value: float) -> str:
    """A float32 as Go's encoder writes it: the shortest digits that read back as the same
    float32, in plain notation, or exponent notation below 1e-6 and from 1e21 (``1e-7``)."""
    value = float32(value)
    if value == 0:
        return "0"
    small, large = float32(1e-6), float32(1e21)
    digits = ""
    for precision in range(1, 10):
        digits = f"{value:.{precision}g}"
        if float32(float(digits)) == value:
            break
    exact = Decimal(digits)
    if abs(value) < small or abs(value) >= large:
        sign, numerals, exponent = exact.as_tuple()
        assert isinstance(exponent, int)
        text = "".join(map(str, numerals)).rstrip("0") or "0"
        power = exponent + len(numerals) - 1
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        # Go writes e+21 and e-07, then its JSON encoder shortens e-07 to e-7.
        tail = f"e+{power:02d}" if power >= 0 else f"e-{-power:02d}"
        if tail.startswith("e-0"):
            tail = "e-" + tail[3:]
        return ("-" if sign else "") + mantissa + tail
    text = f"{exact:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES |= {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}
_ESCAPES |= {"\u2028": "\\u2028", "\u2029": "\\u2029"}


#: a string Go writes as it is, between quotes (nothing to escape: the usual case)
_PLAIN_STRING = re.compile(r'[^"\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]*')


def encode_string(text: str) -> str:
    if _PLAIN_STRING.fullmatch(text):
        return f'"{text}"'
    out = ['"']
    for char in text:
        escaped = _ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        elif 0xD800 <= ord(char) < 0xE000:
            out.append("\ufffd")  # a lone surrogate is not UTF-8: Go writes U+FFFD
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


@dataclass(frozen=True, slots=True)
class F32:
    """A number to be written as Go writes a float32 (a toxicity)."""

    value: float


Encodable = Union[  # noqa: UP007 - a recursive alias
    None, bool, int, float, str, F32, Num, Obj, Mapping[str, "Encodable"], Sequence["Encodable"]
]


def encode(value: Encodable) -> str:
    """``value`` as Go's ``json.Marshal`` writes it (dicts in their own order)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, F32):
        return format_float32(value.value)
    if isinstance(value, Num):
        return value.text
    if isinstance(value, Obj):
        return "{" + ",".join(f"{encode_string(k)}:{encode(v)}" for k, v in value.items) + "}"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return encode_string(value)
    if isinstance(value, Mapping):
        members = ",".join(f"{encode_string(k)}:{encode(v)}" for k, v in value.items())
        return "{" + members + "}"
    return "[" + ",".join(encode(item) for item in value) + "]"
