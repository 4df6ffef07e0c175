"""Frame-positioned faults on real third-party servers, judged from the wire, plain and over TLS.

Every test runs the reference consumer through tearline's proxy against a server tearline did
not write (``servers.py``), places a fault by frame, frame boundary or content match on the
live stream, and checks three things: the byte offset the fault fired at is the one computed
from what the server sent on that connection (``run_tapped``: captured below the proxy, as
plaintext over TLS, and read by ``wire.py``'s parsers); the consumer's verdict is the one the
cut calls for; and the invariants I1, I2, I3 and I5 were judged from the wire (none reads "not
judged"). Over TLS the proxy originates TLS to the server (verifying it against the service's
CA, ``upstream_ca``) and the faults act on the plaintext: for the servers whose bytes are the
same on every connection, the very offsets of a plain run (the last test).
"""

from __future__ import annotations

import hashlib

import pytest

from harness.judging.results import CaseResult, Outcome
from tests.thirdparty.conftest import Service, run_against, run_tapped
from tests.thirdparty.servers import TEXTS

FRAMINGS = ("sse", "websocket", "grpc", "ndjson")
SECURITY = pytest.mark.parametrize("secure", [False, True], ids=["plain", "tls"])
#: NDJSON has no end of its own: a clean close proves nothing, so no result is complete
HAS_END = {"sse": True, "websocket": True, "grpc": True, "ndjson": False}
JUDGED_FROM_THE_WIRE = ("I1", "I2", "I3", "I5")
SENT = [hashlib.sha256(text.encode()).hexdigest() for text in TEXTS]


@pytest.fixture(params=FRAMINGS)
def service(request: pytest.FixtureRequest, services: dict[str, Service]) -> Service:
    return services[request.param]


def checks(result: CaseResult) -> dict[str, bool | None]:
    return {check.name: check.ok for check in result.checks}


def judged(result: CaseResult) -> dict[str, bool | None]:
    """The wire-judged invariants: True or False, never None ("not judged")."""
    found = {name: ok for name, ok in checks(result).items() if name in JUDGED_FROM_THE_WIRE}
    assert set(found) == set(JUDGED_FROM_THE_WIRE)
    return found


def accepted(result: CaseResult) -> list[str]:
    assert result.report is not None, result.diagnosis
    return [message.sha256 for message in result.report.accepted]


def placed(result: CaseResult) -> list[tuple[str, int | None]]:
    return [(fault.name, fault.offset) for fault in result.timeline.faults]


@SECURITY
async def test_a_clean_stream_passes_judged_from_the_wire(service: Service, secure: bool) -> None:
    complete = HAS_END[service.framing]
    expect = "{verdict: MESSAGE_COMPLETE, complete: %s, accepted_messages: 5}"
    result = await run_against(service, secure, "[]", expect % str(complete).lower())
    assert (result.outcome, result.diagnosis) == (
        Outcome.PASS,
        f"MESSAGE_COMPLETE, complete={complete}, 5 accepted",
    )
    assert judged(result) == dict.fromkeys(JUDGED_FROM_THE_WIRE, True)
    assert accepted(result) == SENT
    assert result.timeline.faults == []


@SECURITY
async def test_splits_at_every_frame_boundary_fall_where_the_server_put_its_frames(
    service: Service, secure: bool
) -> None:
    complete = HAS_END[service.framing]
    splits = ", ".join(f"{{kind: split, at: {{frame: {k}}}}}" for k in range(2, 6))
    run = await run_tapped(
        service,
        secure,
        f"[{splits}]",
        f"{{verdict: MESSAGE_COMPLETE, complete: {str(complete).lower()}, accepted_messages: 5}}",
    )
    result, sent = run.result, run.sent
    assert sent.messages == tuple(text.encode() for text in TEXTS)
    assert (result.outcome, result.diagnosis) == (
        Outcome.PASS,
        f"MESSAGE_COMPLETE, complete={complete}, 5 accepted",
    )
    # the live locator's frames are the ones an independent reading of the capture finds
    assert result.frames == sent.spans
    assert placed(result) == [("split", start) for start, _ in sent.spans[1:]]
    assert judged(result) == dict.fromkeys(JUDGED_FROM_THE_WIRE, True)
    assert accepted(result) == SENT


@SECURITY
async def test_an_rst_halfway_through_frame_2_lands_there_and_fails_closed(
    service: Service, secure: bool
) -> None:
    run = await run_tapped(
        service,
        secure,
        "[{kind: kill, how: rst, at: {frame: 2, fraction: 0.5}}]",
        "{verdict: STALE_PARTIAL_BUFFER, complete: false, accepted_messages: 1}",
    )
    result = run.result
    start, end = run.sent.spans[1]
    cut = start + int(0.5 * (end - start))
    assert (result.outcome, result.diagnosis) == (
        Outcome.PASS,
        "STALE_PARTIAL_BUFFER, complete=False, 1 accepted",
    )
    assert placed(result) == [("kill", cut)]
    down = result.timeline.end_of(1, "downstream")
    assert down is not None
    assert (down.how, down.written) == ("rst", cut)
    assert judged(result) == dict.fromkeys(JUDGED_FROM_THE_WIRE, True)
    assert accepted(result) == SENT[:1]
    assert result.report is not None
    assert result.report.error_code == "CONNECTION_RESET"


@SECURITY
async def test_a_dropped_frame_is_exactly_that_message_and_marked_undetectable(
    service: Service, secure: bool
) -> None:
    run = await run_tapped(
        service, secure, "[{kind: drop_frame, frame: 2}]", "{accepted_messages: 4}"
    )
    result = run.result
    assert placed(result) == [("drop_frame", run.sent.spans[1][0])]
    assert accepted(result) == SENT[:1] + SENT[2:]
    # No consumer can see a whole message vanish from opaque messages (nothing numbers them):
    # the judge does not hold the consumer to it, and the result says the fault is
    # undetectable by this protocol.
    complete = HAS_END[service.framing]
    assert (result.outcome, result.diagnosis) == (
        Outcome.PASS,
        f"MESSAGE_COMPLETE, complete={complete}, 4 accepted",
    )
    assert result.undetectable == (
        "drop_frame: undetectable by this protocol (messages: loss: nothing numbers the messages)",
    )
    assert judged(result) == dict.fromkeys(JUDGED_FROM_THE_WIRE, True)


@SECURITY
async def test_a_fin_at_a_content_match_cuts_inside_the_message_holding_it(
    service: Service, secure: bool
) -> None:
    run = await run_tapped(
        service,
        secure,
        "[{kind: kill, how: fin, at: {match: needle}}]",
        "{verdict: STALE_PARTIAL_BUFFER, complete: false, accepted_messages: 2}",
    )
    result = run.result
    needle = run.capture.find(b"needle")
    assert run.sent.spans[1][1] < needle  # past frame 2: "needle" is in TEXTS[2], frame 3
    assert (result.outcome, result.diagnosis) == (
        Outcome.PASS,
        "STALE_PARTIAL_BUFFER, complete=False, 2 accepted",
    )
    assert placed(result) == [("kill", needle)]
    assert judged(result) == dict.fromkeys(JUDGED_FROM_THE_WIRE, True)
    assert accepted(result) == SENT[:2]


@pytest.mark.parametrize("framing", ["sse", "websocket", "ndjson"])
async def test_over_tls_the_faults_fall_on_the_same_plaintext_offsets(
    services: dict[str, Service], framing: str
) -> None:
    """Straight to the servers, no tap: uvicorn, websockets and the asyncio line server send
    the same bytes on every connection, so one known output places the faults of both runs.
    (grpcio does not: whether its SETTINGS acknowledgement and WINDOW_UPDATE come before its
    response HEADERS or after the first DATA frame follows when it read the client's frames,
    so its frames are checked per connection, through a tap, in the tests above.)"""
    service = services[framing]  # 12 bytes into frame 4: past any chunk or frame header
    known = (await run_tapped(service, False, "[]", "{accepted_messages: 5}")).sent
    faults = (
        "[{kind: split, at: {frame: 2, fraction: 0.5}},"
        " {kind: kill, how: fin, at: {frame: 4, frame_offset: 12}}]"
    )
    expect = "{verdict: STALE_PARTIAL_BUFFER, complete: false, accepted_messages: 3}"
    plain = await run_against(service, False, faults, expect)
    secure = await run_against(service, True, faults, expect)
    (start, end), (fourth, _) = known.spans[1], known.spans[3]
    expected = [("split", start + int(0.5 * (end - start))), ("kill", fourth + 12)]
    assert placed(plain) == placed(secure) == expected
    assert (plain.outcome, secure.outcome) == (Outcome.PASS, Outcome.PASS), secure.diagnosis
    assert judged(secure) == dict.fromkeys(JUDGED_FROM_THE_WIRE, True)
    assert accepted(plain) == accepted(secure) == SENT[:3]
