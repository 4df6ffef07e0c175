"""TLS on both sides of the proxy, end to end on loopback.

The library runs over TLS (``link.tls``, ``tearline run --tls``) with the same outcomes as
without, for every framing; faults stay where they were on the plaintext; an https upstream is
verified (a certificate for another name, an unknown CA, a peer that does not speak TLS: one
line, outcome ``error``, the run goes on), unless ``upstream_insecure``; a consumer program is
given the run CA as ``{ca_file}`` and in the trust-store variables. ``TlsStream``'s half-close
keeps what the peer sent before it.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
import ssl
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from harness.cli.scenario import load_cases, with_tls
from harness.evidence.timeline import Timeline
from harness.judging.results import CaseResult, Outcome, replay_command
from harness.link.reference import link_spec, prepared_link, producer_config
from harness.proxy.server import Proxy, ProxyConfig
from harness.proxy.tlsio import Originate, ProxyTls
from harness.running.case import run_case
from harness.running.certificates import Authority, new_authority, run_authority
from harness.running.execute import RunSettings, is_timed, run_all
from harness.running.external import TRUST_STORE_VARIABLES, command_for
from harness.scenario import Case, expand, load_text
from reference_impl.peers import tls_stream
from reference_impl.peers.producer import Producer
from reference_impl.peers.tls_stream import TlsStream

LOOPBACK = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).parent / "programs"
FRAMINGS = ("length-prefixed", "ndjson", "sse", "websocket", "grpc")
#: scenarios taken from the library per framing (one case of each, spread over the library)
PER_FRAMING = 12
ENVELOPE_SSE = "{framing: sse, payload: envelope, envelope: {records: 20, chunk_records: 5}}"
#: the diagnosis of a passed case of ENVELOPE_SSE without faults (4 chunks, header, trailer)
VERIFIED = "RESULT_VERIFIED, complete=True, 6 accepted"


def one_case(link: str, expect: str, faults: str = "[]", extra: str = "") -> Case:
    text = (
        f"name: t\ndescription: a TLS test\nlink: {link}\nfaults: {faults}\n"
        f"expect: {expect}\n{extra}"
    )
    (scenario,) = load_text(text, "tls-test.yaml")
    (case,) = expand(scenario, prepared_link)
    return case


def facts(results: list[CaseResult]) -> list[tuple[str, Outcome, str | None, bool | None, int]]:
    """What a run concluded, case by case (the consumer's verdict, not only the outcome)."""
    return [
        (
            r.case_id,
            r.outcome,
            None if r.report is None else r.report.verdict,
            None if r.report is None else r.report.complete,
            -1 if r.report is None else len(r.report.accepted),
        )
        for r in results
    ]


@functools.cache
def library_selection() -> dict[str, tuple[Case, ...]]:
    """Per framing, one case from each of ``PER_FRAMING`` scenarios spread over the library
    (untimed ones, so that a loaded machine cannot change a verdict)."""
    by_framing: dict[str, list[Case]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for case in load_cases([str(ROOT / "scenarios")]):
        scenario = case.scenario
        key = (scenario.origin.file if scenario.origin else "", scenario.name)
        if key in seen or is_timed(scenario) or scenario.exclusive:
            continue
        if scenario.link.payload == "mcp":  # an MCP session takes no TLS (docs/mcp.md)
            continue
        seen.add(key)
        by_framing[scenario.link.framing].append(case)
    return {
        framing: tuple(cases[i * len(cases) // PER_FRAMING] for i in range(PER_FRAMING))
        for framing, cases in by_framing.items()
    }


@pytest.fixture
def handshakes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, str | None]]:
    """Every TlsStream handshake of the test: (server side?, the ALPN protocol agreed)."""
    seen: list[tuple[bool, str | None]] = []
    real = TlsStream.do_handshake

    async def counted(self: TlsStream) -> None:
        await real(self)
        seen.append((self._ssl.server_side, self.selected_alpn_protocol()))

    monkeypatch.setattr(tls_stream.TlsStream, "do_handshake", counted)
    return seen


# ---- the library over TLS ---------------------------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_the_library_runs_over_tls_with_the_outcomes_it_has_without(
    framing: str, handshakes: list[tuple[bool, str | None]]
) -> None:
    cases = library_selection()[framing]
    assert len(cases) == PER_FRAMING
    settings = RunSettings(jobs=1, in_flight=8)
    plain = facts(run_all(cases, settings))
    assert handshakes == []
    over_tls = facts(run_all([with_tls(c, True, None, False) for c in cases], settings))
    assert over_tls == plain
    assert {outcome for _, outcome, *_ in plain} == {Outcome.PASS}
    # each connection: the proxy's two sides and the reference producer (the consumer is
    # trio's SSLStream), every one agreeing on the framing's protocol
    protocol = "h2" if framing == "grpc" else "http/1.1"
    assert len(handshakes) >= 3 * len(cases)
    assert set(handshakes) == {(True, protocol), (False, protocol)}


async def test_frame_positioned_faults_fall_on_the_same_plaintext_offsets_over_tls() -> None:
    case = one_case(
        ENVELOPE_SSE,
        "{verdict: ERR_ZPARQL_STREAM_TRUNCATED, complete: false, accepted_messages: 0}",
        "[{kind: split, at: {frame: 2, fraction: 0.5}},"
        " {kind: kill, how: fin, at: {frame: 3, fraction: 0.5}}]",
    )
    spans = prepared_link(case.scenario).spans
    split_at = spans[1][0] + (spans[1][1] - spans[1][0]) // 2
    cut_at = spans[2][0] + (spans[2][1] - spans[2][0]) // 2
    plain = await run_case(case)
    secure = await run_case(with_tls(case, True, None, False))
    assert (plain.outcome, secure.outcome) == (Outcome.PASS, Outcome.PASS)
    placed = [(f.name, f.offset) for f in secure.timeline.faults]
    assert placed == [(f.name, f.offset) for f in plain.timeline.faults]
    assert [offset for _, offset in placed] == [split_at, cut_at]
    assert _written(secure.timeline) == _written(plain.timeline) == cut_at
    # the replay runs over TLS too (it once left ``--tls`` out)
    assert shlex.split(replay_command(secure))[-1:] == ["--tls"]
    assert "--tls" not in shlex.split(replay_command(plain))


def _written(timeline: Timeline) -> int:
    return sum(s.length for s in timeline.segments if s.direction == "downstream")


# ---- an https upstream: verified, or explicitly not ---------------------------------------------


def foreign(folder: Path, *names: str) -> Authority:
    """A CA nobody trusts (not the run's, not the system's), with a certificate for ``names``."""
    return new_authority(folder, names, organization="somebody else's CA")


async def run_against(
    case: Case,
    serve: Callable[..., Awaitable[None]],
    ca: str | None = None,
    insecure: bool = False,
) -> CaseResult:
    """``case`` with its upstream an https server started by ``serve`` (loopback, a port
    from the OS)."""
    async with trio.open_nursery() as nursery:
        started = await nursery.start(serve)
        port = started if isinstance(started, int) else _listening_port(started)
        with trio.fail_after(15):  # nothing hangs: the case deadline is 10 s
            result = await run_case(with_upstream(case, f"https://{LOOPBACK}:{port}", ca, insecure))
        nursery.cancel_scope.cancel()
    return result


def _listening_port(listeners: list[trio.SSLListener[trio.SocketStream]]) -> int:
    transport = listeners[0].transport_listener
    assert isinstance(transport, trio.SocketListener)
    port: int = transport.socket.getsockname()[1]
    return port


def with_upstream(case: Case, upstream: str, ca: str | None = None, insecure: bool = False) -> Case:
    link = case.scenario.link
    producer = dataclasses.replace(
        link.producer, upstream=upstream, upstream_ca=ca, upstream_insecure=insecure
    )
    link = dataclasses.replace(link, producer=producer)
    return dataclasses.replace(case, scenario=dataclasses.replace(case.scenario, link=link))


def reference_producer(case: Case, context: ssl.SSLContext) -> Callable[..., Awaitable[None]]:
    link = case.scenario.link
    producer = Producer(producer_config(link, link_spec(link)))
    return functools.partial(producer.serve, LOOPBACK, 0, tls=context)


def envelope_case(**extra: str) -> Case:
    return one_case(ENVELOPE_SSE, "{verdict: RESULT_VERIFIED, complete: true}", **extra)


async def test_an_https_upstream_with_a_private_ca_is_verified_and_judged(tmp_path: Path) -> None:
    case = envelope_case()
    theirs = foreign(tmp_path, LOOPBACK)
    context = theirs.server_context(["http/1.1"])
    result = await run_against(case, reference_producer(case, context), ca=str(theirs.ca_file))
    assert (result.outcome, result.diagnosis) == (Outcome.PASS, VERIFIED)
    # the replay trusts the same CA (it once left ``--upstream-ca`` out, and failed to verify)
    assert shlex.split(replay_command(result))[-4:] == [
        "--upstream",
        str(result.target.upstream),
        "--upstream-ca",
        str(theirs.ca_file),
    ]


async def test_upstream_insecure_accepts_a_certificate_nobody_trusts(tmp_path: Path) -> None:
    case = envelope_case()
    context = foreign(tmp_path, "somewhere.invalid").server_context(["http/1.1"])
    result = await run_against(case, reference_producer(case, context), insecure=True)
    assert (result.outcome, result.diagnosis) == (Outcome.PASS, VERIFIED)
    assert shlex.split(replay_command(result))[-1:] == ["--upstream-insecure"]


@pytest.mark.parametrize(
    ("names", "trust", "cause"),
    [
        (
            ("other.example",),
            True,
            "certificate verify failed: IP address mismatch, certificate is not valid for "
            "'127.0.0.1'.",
        ),
        ((LOOPBACK,), False, "certificate verify failed: unable to get local issuer certificate"),
    ],
    ids=["another-name", "unknown-ca"],
)
async def test_an_upstream_certificate_that_fails_verification_is_one_error_line(
    tmp_path: Path, names: tuple[str, ...], trust: bool, cause: str
) -> None:
    case = envelope_case()
    theirs = foreign(tmp_path, *names)
    trusted = str(theirs.ca_file) if trust else None
    result = await run_against(case, _handshake_only(theirs.server_context()), trusted)
    assert result.outcome == Outcome.ERROR
    port = result.target.upstream.rpartition(":")[2] if result.target.upstream else ""
    assert result.diagnosis == f"connection 1: upstream {LOOPBACK}:{port}: TLS: {cause}"


def _handshake_only(context: ssl.SSLContext) -> Callable[..., Awaitable[None]]:
    """A TLS server that handshakes (or fails to) and then waits."""

    async def handle(stream: trio.SSLStream[trio.SocketStream]) -> None:
        with trio.move_on_after(10):
            try:
                await stream.do_handshake()
                await stream.receive_some()
            except trio.BrokenResourceError:
                pass

    return functools.partial(trio.serve_ssl_over_tcp, handle, 0, context, host=LOOPBACK)


async def test_an_upstream_that_does_not_speak_tls_is_one_error_line() -> None:
    """The plain reference producer, declared https: it reads a ClientHello as a request."""
    case = envelope_case()
    link = case.scenario.link
    plain = Producer(producer_config(link, link_spec(link)))
    result = await run_against(case, functools.partial(plain.serve, LOOPBACK, 0))
    port = result.target.upstream.rpartition(":")[2] if result.target.upstream else ""
    assert (result.outcome, result.diagnosis) == (
        Outcome.ERROR,
        f"connection 1: upstream {LOOPBACK}:{port}: TLS: the peer closed the connection "
        "during the TLS handshake",
    )


async def test_an_upstream_that_never_answers_the_handshake_times_out() -> None:
    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, silent, 0)
        upstream = listeners[0].socket.getsockname()[1]
        tls = ProxyTls(originate=Originate(LOOPBACK), handshake_timeout_s=0.2)
        proxy = Proxy(ProxyConfig((LOOPBACK, upstream), tls=tls), Timeline())
        port = await nursery.start(proxy.serve, LOOPBACK, 0)
        with trio.fail_after(5):
            client = await trio.open_tcp_stream(LOOPBACK, port)
            with pytest.raises(trio.BrokenResourceError):  # the consumer is cut off: an RST
                while await client.receive_some():
                    pass
        nursery.cancel_scope.cancel()
    assert proxy.errors == [
        f"connection 1: upstream {LOOPBACK}:{upstream}: TLS: no TLS handshake within 0.2 s "
        "(does the peer speak TLS?)"
    ]


async def test_a_failing_upstream_does_not_stop_the_run(tmp_path: Path) -> None:
    """A run of two cases: an upstream whose certificate no CA here vouches for, then a good
    case. Both are judged, in order (``run_all`` in a thread: it runs trio on its own)."""
    serve = _handshake_only(foreign(tmp_path, "other.example").server_context())
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(serve)
        port = _listening_port(listeners)
        bad = with_upstream(envelope_case(), f"https://{LOOPBACK}:{port}")
        good = with_tls(envelope_case(), True, None, False)
        with trio.fail_after(30):
            results = await trio.to_thread.run_sync(run_all, [bad, good])
        nursery.cancel_scope.cancel()
    assert [(r.outcome, r.diagnosis) for r in results] == [
        (
            Outcome.ERROR,
            f"connection 1: upstream {LOOPBACK}:{port}: TLS: certificate verify failed: unable "
            "to get local issuer certificate",
        ),
        (Outcome.PASS, VERIFIED),
    ]


# ---- the consumer's side: the proxy's certificate and the contract --------------------------


def test_a_consumer_program_is_given_the_run_ca_as_placeholder_and_in_the_environment() -> None:
    case = with_tls(envelope_case(), True, None, False)
    link = dataclasses.replace(
        case.scenario.link,
        consumer=dataclasses.replace(case.scenario.link.consumer, command=("c", "{ca_file}")),
    )
    argv, env = command_for(link, LOOPBACK, 4000)
    ca = str(run_authority().ca_file)
    assert argv == ["c", ca]
    assert [env[name] for name in ("TEARLINE_CA_FILE", *TRUST_STORE_VARIABLES)] == [ca] * 4
    assert env["TEARLINE_TLS"] == "true"
    plain_argv, plain_env = command_for(dataclasses.replace(link, tls=False), LOOPBACK, 4000)
    assert (plain_argv, plain_env["TEARLINE_CA_FILE"], plain_env["TEARLINE_TLS"]) == (
        ["c", ""],
        "",
        "false",
    )


def program_case(command: list[str], payload_link: str = ENVELOPE_SSE) -> Case:
    case = envelope_case()
    link = dataclasses.replace(
        case.scenario.link,
        tls=True,
        consumer=dataclasses.replace(case.scenario.link.consumer, command=tuple(command)),
    )
    return dataclasses.replace(case, scenario=dataclasses.replace(case.scenario, link=link))


def consume(*extra: str) -> list[str]:
    """``tearline consume`` as a consumer program, its options from the contract."""
    return [
        sys.executable,
        "-m",
        "harness.cli",
        "consume",
        "--connect",
        "{host}:{port}",
        "--framing",
        "{framing}",
        "--payload",
        "{payload}",
        "--json",
        *extra,
    ]


async def test_the_reference_consumer_program_trusts_the_proxy_through_ca_file() -> None:
    result = await run_case(program_case(consume("--ca-file", "{ca_file}")))
    assert (result.outcome, result.diagnosis) == (Outcome.PASS, VERIFIED)


async def test_a_program_with_no_ca_of_its_own_trusts_the_proxy_through_ssl_cert_file() -> None:
    command = [sys.executable, str(PROGRAMS / "tls_contract.py"), "{ca_file}", *consume("--tls")]
    result = await run_case(program_case(command))
    assert (result.outcome, result.diagnosis) == (Outcome.PASS, VERIFIED)


async def test_a_consumer_that_does_not_trust_the_proxy_is_a_setup_error() -> None:
    """``--tls`` alone, without the trust-store variables: the consumer refuses the proxy's
    certificate (trio's SSLStream closes without an alert), the proxy says so in one line."""
    command = ["env", *(f"-u{name}" for name in TRUST_STORE_VARIABLES), *consume("--tls")]
    result = await run_case(program_case(command))
    assert result.outcome == Outcome.ERROR
    assert result.diagnosis == (
        "connection 1: TLS handshake with the consumer failed: the peer closed the connection "
        "during the TLS handshake; does the consumer trust the run's CA ({ca_file})?"
    )


# ---- TlsStream itself ------------------------------------------------------------------------


@pytest.fixture
async def tls_pair() -> AsyncIterator[tuple[TlsStream, TlsStream]]:
    """A server and a client TlsStream over loopback TCP, their handshakes done."""
    authority = run_authority()
    (listener,) = await trio.open_tcp_listeners(0, host=LOOPBACK)
    async with listener:
        port = listener.socket.getsockname()[1]
        raw = await trio.open_tcp_stream(LOOPBACK, port)  # the backlog completes the connect
        server = TlsStream(await listener.accept(), authority.server_context(), server_side=True)
    client = TlsStream(raw, authority.client_context(), server_side=False, server_hostname=LOOPBACK)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.do_handshake)
        nursery.start_soon(client.do_handshake)
    yield server, client
    await server.aclose()
    await client.aclose()


async def test_a_half_close_keeps_what_the_peer_sent_before_it(
    tls_pair: tuple[TlsStream, TlsStream],
) -> None:
    """Records waiting unread when close_notify goes out are still read, in order, and the
    peer may go on writing (``SSLObject.unwrap`` alone would lose them: module docstring)."""
    server, client = tls_pair
    for part in (b"one", b"two", b"three"):
        await client.send_all(part)  # a record each
    assert await server.receive_some(3) == b"one"
    await server.wait_send_all_might_not_block()
    await trio.testing.wait_all_tasks_blocked()
    await server.send_eof()
    assert await client.receive_some() == b""  # close_notify: the end of this direction
    await client.send_all(b"four")
    await client.send_eof()
    got = []
    while data := await server.receive_some():
        got.append(data)
    assert b"".join(got) == b"twothreefour"
    with pytest.raises(trio.ClosedResourceError):
        await server.send_all(b"late")


async def test_a_close_is_close_notify_then_a_clean_end(
    tls_pair: tuple[TlsStream, TlsStream],
) -> None:
    server, client = tls_pair
    await server.send_all(b"last words")
    await server.aclose()  # close_notify, then FIN
    assert await client.receive_some() == b"last words"
    assert await client.receive_some() == b""


async def test_a_reset_reaches_the_peer_as_a_reset(tls_pair: tuple[TlsStream, TlsStream]) -> None:
    server, client = tls_pair
    client.reset()
    await client.aclose()  # no close_notify: an RST
    with pytest.raises(trio.BrokenResourceError) as caught:
        await server.receive_some()
    assert isinstance(caught.value.__cause__, ConnectionResetError)
