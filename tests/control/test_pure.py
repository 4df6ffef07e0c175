"""The pure parts: Go's JSON texts, listen addresses, request ids."""

from __future__ import annotations

import pytest

from harness.control.addresses import AddressError, parse_listen, resolve_listen
from harness.control.gojson import GoJsonError, format_float32, parse
from harness.control.routes import RequestIds, clean_path


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("", "EOF"),
        ("  \n", "EOF"),
        ('{"a":1', "unexpected EOF"),
        ("{bad", "invalid character 'b' looking for beginning of object key string"),
        ("xx", "invalid character 'x' looking for beginning of value"),
        ('{"a" 1}', "invalid character '1' after object key"),
        ('{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        ("[1 2]", "invalid character '2' after array element"),
        ("tru", "unexpected EOF"),
        ("trux", "invalid character 'x' in literal true (expecting 'e')"),
        ("-x", "invalid character 'x' in numeric literal"),
    ],
)
def test_syntax_errors_read_as_go_writes_them(body: str, error: str) -> None:
    with pytest.raises(GoJsonError) as caught:
        parse(body)
    assert caught.value.text == error


def test_only_the_first_value_is_read() -> None:
    assert parse('{"a":1} garbage') is not None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1, "1"),
        (0.5, "0.5"),
        (0, "0"),
        (-1, "-1"),
        (0.333333333333, "0.33333334"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1e21, "1e+21"),
        (5, "5"),
    ],
)
def test_float32_is_written_shortest_as_go_does(value: float, text: str) -> None:
    assert format_float32(value) == text


@pytest.mark.parametrize(
    ("listen", "error"),
    [
        ("bogus", "listen tcp: address bogus: missing port in address"),
        ("127.0.0.1:99999", "listen tcp: address 99999: invalid port"),
        ("127.0.0.1:http2x", "listen tcp: address tcp/http2x: unknown port"),
    ],
)
def test_listen_errors_are_gos(listen: str, error: str) -> None:
    with pytest.raises(AddressError) as caught:
        parse_listen(listen)
    assert caught.value.text == error


def test_listen_addresses_resolve_as_go_shows_them() -> None:
    assert resolve_listen("localhost:8474").shown == "127.0.0.1:8474"
    assert resolve_listen("[::1]:0").shown == "[::1]:0"
    assert not resolve_listen(":80").loopback and resolve_listen("127.0.0.2:1").loopback


def test_clean_path_is_gos_path_clean() -> None:
    assert clean_path("//proxies") == "/proxies"
    assert clean_path("/proxies/../version") == "/version"
    assert clean_path("/proxies/") == "/proxies/"


def test_request_ids_are_xids() -> None:
    ids = RequestIds(machine=b"\x01\x02\x03", pid=7, counter=0)
    first, second = ids.next(now=1_700_000_000), ids.next(now=1_700_000_000)
    assert len(first) == 20 and set(first) <= set("0123456789abcdefghijklmnopqrstuv")
    assert first < second and first[:15] == second[:15]
