"""The seed 001 result envelope: frames made lazily, verified fail-closed in O(1) memory."""

from __future__ import annotations

import hashlib
import itertools
import json
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.errors import CodecError, ErrorCode
from reference_impl.payload.envelope import (
    COLUMNS,
    END_TOKEN,
    EnvelopeResult,
    EnvelopeSpec,
    EnvelopeVerifier,
    IdDigest,
    encode_frame,
    header_frame,
    iter_chunks,
    iter_frames,
    iter_messages,
    trailer_frame,
)
from tests.wire import examples

TRUNCATED = ErrorCode.ERR_ZPARQL_STREAM_TRUNCATED
MISMATCH = ErrorCode.ERR_ZPARQL_STREAM_CHECKSUM_MISMATCH
B = 50


def run(frames: list[bytes]) -> EnvelopeResult | ErrorCode:
    """Feed every frame, then a clean EOF: the result, or the code of the first violation."""
    verifier = EnvelopeVerifier()
    try:
        for frame in frames:
            verifier.feed(frame)
        return verifier.feed_eof()
    except CodecError as err:
        return err.code


def frames_of(records: int, chunk_records: int = B) -> list[bytes]:
    return list(iter_frames(EnvelopeSpec(records, chunk_records)))


def expected_checksum(ids: list[str]) -> str:
    return "sha256:" + hashlib.sha256(b"".join(i.encode() + b"\n" for i in ids)).hexdigest()


def header_with(**changes: object) -> bytes:
    frame = json.loads(header_frame(EnvelopeSpec(1)))
    frame.update(changes)
    return encode_frame({k: v for k, v in frame.items() if v is not None})


def chunk(sequence: object, records: object) -> bytes:
    return encode_frame({"frame_type": "chunk", "sequence": sequence, "records": records})


# --- producer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("records", [0, 1, B, B + 1, 1000])
def test_happy_path(records: int) -> None:
    spec = EnvelopeSpec(records)
    frames = list(iter_frames(spec))
    assert len(frames) == 2 + -(-records // B) == 2 + spec.chunk_count
    decoded = [json.loads(f) for f in frames]
    assert [d["frame_type"] for d in decoded] == ["header"] + ["chunk"] * spec.chunk_count + [
        "trailer"
    ]
    assert [d["sequence"] for d in decoded[1:-1]] == list(range(1, spec.chunk_count + 1))
    ids = [r["id"] for d in decoded[1:-1] for r in d["records"]]
    assert ids == [f"BLI-{i}" for i in range(1, records + 1)]
    assert all(len(d["records"]) == B for d in decoded[1:-2])
    checksum = expected_checksum(ids)
    assert decoded[-1] == {
        "frame_type": "trailer",
        "total_records": records,
        "checksum": checksum,
        "end_token": "EOS_FINALIZED",
    }
    query_hash = "sha256:" + hashlib.sha256(b"MATCH (n) RETURN n").hexdigest()
    assert run(frames) == EnvelopeResult(records, checksum, query_hash, COLUMNS)


def test_frames_are_compact_utf8_json_without_newlines() -> None:
    for frame in frames_of(12, 5):
        assert b"\n" not in frame and b"\r" not in frame
        obj = json.loads(frame.decode("utf-8"))
        assert json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() == frame
    # Multi-byte titles travel raw, so a cut can land inside a character.
    assert "Café Index".encode() in frames_of(2)[1]
    assert "🚀".encode() in frames_of(6)[1]


def test_pinned_bytes_of_a_small_envelope() -> None:
    header, chunk1, trailer = frames_of(2)
    assert header == (
        b'{"frame_type":"header","query_hash":"sha256:a6f6d0e878871beeb92746853bd945a91186107a6'
        b'179b01a27b4c28bd53818cf","columns":["id","title","priority_tier","status"],"types":{"id"'
        b':"string","title":"string","priority_tier":"string","status":"string"}}'
    )
    assert chunk1 == (
        b'{"frame_type":"chunk","sequence":1,"records":[{"id":"BLI-1","title":"Stream Engine",'
        b'"priority_tier":"P1","status":"planned"},{"id":"BLI-2","title":"Caf\xc3\xa9 Index",'
        b'"priority_tier":"P2","status":"active"}]}'
    )
    assert json.loads(trailer)["checksum"] == (
        "sha256:" + hashlib.sha256(b"BLI-1\nBLI-2\n").hexdigest()
    )


def test_record_ids_are_unique_and_record_bounds_checked() -> None:
    spec = EnvelopeSpec(1000)
    assert len({spec.record(i)["id"] for i in range(1, 1001)}) == 1000
    assert spec.record(1) == {
        "id": "BLI-1",
        "title": "Stream Engine",
        "priority_tier": "P1",
        "status": "planned",
    }
    for bad in (0, 1001, -1):
        with pytest.raises(IndexError):
            spec.record(bad)


@pytest.mark.parametrize(("records", "chunk_records"), [(-1, 50), (5, 0)])
def test_spec_rejects_nonsense(records: int, chunk_records: int) -> None:
    with pytest.raises(ValueError):
        EnvelopeSpec(records, chunk_records)


def test_frames_are_made_lazily() -> None:
    # 10^12 records: only possible if nothing is built ahead of what is asked for.
    frames = iter_frames(EnvelopeSpec(10**12, 3))
    first = list(itertools.islice(frames, 3))
    assert [json.loads(f).get("sequence") for f in first] == [None, 1, 2]


def test_iter_chunks_and_iter_messages_agree_with_iter_frames() -> None:
    spec = EnvelopeSpec(7, 3)
    frames = list(iter_frames(spec))
    assert list(iter_chunks(spec)) == frames[1:-1]
    assert frames[0] == header_frame(spec)
    assert frames[-1] == trailer_frame(7, spec.checksum())
    assert [m.data for m in iter_messages(spec)] == frames
    assert {(m.kind, m.id) for m in iter_messages(spec)} == {("", "")}


def test_custom_query_changes_only_the_query_hash() -> None:
    frames = list(iter_frames(EnvelopeSpec(3, 2, "MATCH (t:Task) RETURN t")))
    result = run(frames)
    assert isinstance(result, EnvelopeResult)
    assert result.query_hash == ("sha256:" + hashlib.sha256(b"MATCH (t:Task) RETURN t").hexdigest())
    assert frames[1:] == frames_of(3, 2)[1:]


# --- verifier: violations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"{",
        b"\xff\xfe",
        b"[]",
        b'"header"',
        b"null",
        b"[" * 100_000 + b"]" * 100_000,  # deep enough to hit the recursion limit
        b'{"frame_type":"header","frame_type":"chunk"}',  # duplicate key
        header_frame(EnvelopeSpec(1)).decode().encode("utf-16"),  # json.loads(bytes) takes it
        header_frame(EnvelopeSpec(1))[:-1],  # a frame the framing delivered cut short
    ],
)
def test_unparseable_first_frame_is_checksum_mismatch(bad: bytes) -> None:
    assert run([bad]) == MISMATCH


@pytest.mark.parametrize(
    "header",
    [
        header_with(query_hash=None),
        header_with(query_hash=7),
        header_with(columns=None),
        header_with(columns="id,title"),
        header_with(columns=["id", "id", "title", "priority_tier", "status"]),
        header_with(columns=["title", "priority_tier", "status"]),
        header_with(columns=["id", 3, "title", "priority_tier", "status"]),
        header_with(types=None),
        header_with(types={"id": "string"}),
        header_with(types=dict.fromkeys(COLUMNS, 1)),
    ],
)
def test_header_missing_or_mistyped_field(header: bytes) -> None:
    assert run([header]) == MISMATCH


GOOD = {"id": "BLI-1", "title": "t", "priority_tier": "P1", "status": "planned"}


@pytest.mark.parametrize(
    "bad_chunk",
    [
        chunk("1", [GOOD]),
        chunk(True, [GOOD]),  # bool is an int to Python only
        chunk(1.0, [GOOD]),
        chunk(None, [GOOD]),
        chunk(1, None),
        chunk(1, {"id": "BLI-1"}),
        chunk(1, ["BLI-1"]),
        chunk(1, [{k: v for k, v in GOOD.items() if k != "status"}]),
        chunk(1, [{**GOOD, "extra": "x"}]),
        chunk(1, [{**GOOD, "id": 1}]),
        chunk(1, [{**GOOD, "id": "?"}]).replace(b'"?"', b'"\\ud800"'),  # a lone surrogate
        b'{"frame_type":"chunky","sequence":1,"records":[]}',
        b'{"sequence":1,"records":[]}',
    ],
)
def test_chunk_missing_or_mistyped_field(bad_chunk: bytes) -> None:
    assert run([header_frame(EnvelopeSpec(1)), bad_chunk]) == MISMATCH


@pytest.mark.parametrize("first", [1, 2, 3])
def test_first_frame_must_be_the_header(first: int) -> None:
    frames = frames_of(5, 2)
    assert run(frames[first:]) == MISMATCH


def test_second_header() -> None:
    header, c1, c2, trailer = frames_of(4, 2)
    assert run([header, c1, header, c2, trailer]) == MISMATCH
    assert run([header, header]) == MISMATCH


@pytest.mark.parametrize(
    "order",
    [
        [2, 3, 4],  # sequences start at 1: 2 first is a gap
        [1, 3, 4],  # gap
        [1, 2, 2, 3, 4],  # duplicate
        [1, 3, 2, 4],  # reorder
        [1, 2, 4, 3],  # reorder at the end
    ],
)
def test_sequence_violations(order: list[int]) -> None:
    frames = frames_of(8, 2)
    assert run([frames[0], *(frames[i] for i in order), frames[-1]]) == MISMATCH


def test_sequence_zero_is_rejected() -> None:
    assert run([header_frame(EnvelopeSpec(1)), chunk(0, [GOOD])]) == MISMATCH


@pytest.mark.parametrize("extra", [0, 1, -1])
def test_frame_after_the_trailer(extra: int) -> None:
    frames = frames_of(4, 2)
    assert run([*frames, frames[extra]]) == MISMATCH
    assert run([*frames, b"garbage"]) == MISMATCH


def test_trailer_before_the_last_chunk() -> None:
    header, c1, c2, trailer = frames_of(4, 2)
    assert run([header, c1, trailer, c2]) == MISMATCH
    assert run([header, trailer, c1, c2]) == MISMATCH


@pytest.mark.parametrize("delta", [-1, 1])
def test_trailer_count_off_by_one(delta: int) -> None:
    spec = EnvelopeSpec(4, 2)
    frames = list(iter_frames(spec))
    frames[-1] = trailer_frame(4 + delta, spec.checksum())
    assert run(frames) == MISMATCH
    verifier = EnvelopeVerifier()
    with pytest.raises(CodecError):
        for frame in frames:
            verifier.feed(frame)
    # What the trailer claimed stays visible for the report, beside what arrived.
    assert (verifier.total_records, verifier.records_received) == (4 + delta, 4)


def test_trailer_checksum_wrong() -> None:
    frames = frames_of(4, 2)
    frames[-1] = trailer_frame(4, expected_checksum(["BLI-1", "BLI-2", "BLI-4", "BLI-3"]))
    assert run(frames) == MISMATCH


def test_corrupt_byte_in_a_record_id_is_checksum_mismatch() -> None:
    frames = frames_of(4, 2)
    frames[2] = frames[2].replace(b'"BLI-3"', b'"BLJ-3"')
    assert run(frames) == MISMATCH


@pytest.mark.parametrize(
    "trailer",
    [
        json.loads(trailer_frame(4, "x")) | {"end_token": "EOS_FINALISED"},
        json.loads(trailer_frame(4, "x")) | {"end_token": "eos_finalized"},
        json.loads(trailer_frame(4, "x")) | {"end_token": "EOS_FINALIZED "},
        json.loads(trailer_frame(4, "x")) | {"end_token": None},
        json.loads(trailer_frame(4, "x")) | {"end_token": ["EOS_FINALIZED"]},
        {"frame_type": "trailer", "total_records": 4, "checksum": "x"},
        {"frame_type": "trailer"},
    ],
)
def test_trailer_without_the_exact_end_token_is_truncated(trailer: dict[str, object]) -> None:
    spec = EnvelopeSpec(4, 2)
    frames = list(iter_frames(spec))
    frames[-1] = encode_frame({**trailer, "checksum": spec.checksum()})
    verifier = EnvelopeVerifier()
    for frame in frames[:-1]:
        verifier.feed(frame)
    with pytest.raises(CodecError) as info:
        verifier.feed(frames[-1])
    assert (info.value.code, info.value.at_boundary) == (TRUNCATED, True)


@pytest.mark.parametrize(
    "trailer",
    [
        {"total_records": "4"},
        {"total_records": None},
        {"total_records": True},
        {"checksum": None},
        {"checksum": 4},
    ],
)
def test_trailer_mistyped_field(trailer: dict[str, object]) -> None:
    spec = EnvelopeSpec(4, 2)
    frames = list(iter_frames(spec))
    base = json.loads(frames[-1])
    frames[-1] = encode_frame({k: v for k, v in (base | trailer).items() if v is not None})
    assert run(frames) == MISMATCH


@pytest.mark.parametrize("keep", [0, 1, 2, 3])
def test_clean_eof_before_the_trailer_is_truncated(keep: int) -> None:
    # Catalogue case 65: a clean FIN on a chunk boundary is still truncation.
    verifier = EnvelopeVerifier()
    for frame in frames_of(4, 2)[:keep]:
        verifier.feed(frame)
    with pytest.raises(CodecError) as info:
        verifier.feed_eof()
    assert (info.value.code, info.value.at_boundary) == (TRUNCATED, True)


# --- verifier: state, stickiness, reporting ---------------------------------------------------


def test_the_first_violation_decides_and_sticks() -> None:
    header, c1, c2, trailer = frames_of(4, 2)
    verifier = EnvelopeVerifier()
    verifier.feed(header)
    with pytest.raises(CodecError) as first:
        verifier.feed(c2)
    assert first.value.code is MISMATCH
    for call in (lambda: verifier.feed(c1), verifier.feed_eof, lambda: verifier.feed(trailer)):
        with pytest.raises(CodecError) as again:
            call()
        assert again.value.code is MISMATCH
    # A transport break afterwards does not overwrite the first verdict.
    assert verifier.truncated("rst").code is MISMATCH


def test_truncated_maps_an_abnormal_end_once() -> None:
    header, c1, _, _ = frames_of(4, 2)
    verifier = EnvelopeVerifier()
    verifier.feed(header)
    verifier.feed(c1)
    err = verifier.truncated("final frame cut short")
    assert (err.code, err.at_boundary) == (TRUNCATED, False)
    assert verifier.truncated().code is TRUNCATED
    with pytest.raises(CodecError) as info:
        verifier.feed_eof()
    assert info.value.code is TRUNCATED
    assert verifier.recovery_predicate() == "REFETCH_FROM_SEQUENCE:2"


def test_truncated_after_eof_truncation_keeps_it() -> None:
    verifier = EnvelopeVerifier()
    with pytest.raises(CodecError):
        verifier.feed_eof()
    assert verifier.truncated(at_boundary=False).at_boundary is True


def test_progress_properties_and_recovery_predicate() -> None:
    header, c1, c2, trailer = frames_of(3, 2)
    verifier = EnvelopeVerifier()
    assert verifier.recovery_predicate() == "REFETCH_ALL"
    verifier.feed(header)
    assert (verifier.records_received, verifier.last_sequence) == (0, 0)
    assert verifier.recovery_predicate() == "REFETCH_ALL"
    verifier.feed(c1)
    assert (verifier.records_received, verifier.last_sequence) == (2, 1)
    assert verifier.recovery_predicate() == "REFETCH_FROM_SEQUENCE:2"
    verifier.feed(c2)
    assert (verifier.records_received, verifier.last_sequence) == (3, 2)
    assert verifier.checksum == expected_checksum(["BLI-1", "BLI-2", "BLI-3"])
    assert not verifier.trailer_seen
    assert verifier.total_records is None
    verifier.feed(trailer)
    assert verifier.trailer_seen
    assert verifier.total_records == 3
    assert verifier.recovery_predicate() == "NONE"
    assert verifier.feed_eof().records == 3
    assert verifier.feed_eof().records == 3  # idempotent


def test_rejected_chunk_counts_for_nothing() -> None:
    header, c1, _, _ = frames_of(4, 2)
    bad = chunk(2, [{**GOOD, "id": "BLI-3"}, {**GOOD, "id": 4}])
    verifier = EnvelopeVerifier()
    verifier.feed(header)
    verifier.feed(c1)
    with pytest.raises(CodecError):
        verifier.feed(bad)
    assert (verifier.records_received, verifier.last_sequence) == (2, 1)
    assert verifier.recovery_predicate() == "REFETCH_ALL"  # content rejected: trust nothing


def test_id_digest_is_the_decision_1_formula() -> None:
    digest = IdDigest()
    for record_id in ("BLI-1", "é", "🚀"):
        digest.add(record_id.encode())
    assert digest.count == 3
    assert digest.checksum == expected_checksum(["BLI-1", "é", "🚀"])
    assert IdDigest().checksum == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def footprint(verifier: EnvelopeVerifier) -> dict[str, object]:
    """What the verifier holds: each slot's type and size, the digest's included."""
    assert not hasattr(verifier, "__dict__")
    held: dict[str, object] = {}
    for name in EnvelopeVerifier.__slots__:
        value = getattr(verifier, name)
        assert not isinstance(value, list | dict | set | bytearray)
        held[name] = (type(value).__name__, sys.getsizeof(value))
    digest = verifier._digest
    held["digest"] = [sys.getsizeof(getattr(digest, n)) for n in IdDigest.__slots__]
    return held


def test_verifier_state_is_constant_size_over_100k_records() -> None:
    spec = EnvelopeSpec(100_000, 500)
    chunks = iter_chunks(spec)
    verifier = EnvelopeVerifier()
    verifier.feed(header_frame(spec))
    verifier.feed(next(chunks))
    early = footprint(verifier)
    for frame in chunks:
        verifier.feed(frame)
    assert footprint(verifier) == early  # 1 chunk or 200: the same slots, the same sizes
    verifier.feed(trailer_frame(100_000, spec.checksum()))
    assert verifier.feed_eof().records == 100_000


# --- Hypothesis: any single-frame fault, any prefix -------------------------------------------

streams = st.builds(frames_of, st.integers(0, 60), st.integers(1, 12))


@examples(150)
@given(frames=streams, data=st.data())
def test_any_single_frame_drop_duplicate_or_swap_is_rejected(
    frames: list[bytes], data: st.DataObject
) -> None:
    n = len(frames)
    op = data.draw(st.sampled_from(["drop", "duplicate", "swap"]))
    i = data.draw(st.integers(0, n - 1))
    faulty = list(frames)
    expected = MISMATCH
    if op == "drop":
        del faulty[i]
        expected = TRUNCATED if i == n - 1 else MISMATCH
    elif op == "duplicate":
        faulty.insert(i, frames[i])
    else:
        j = data.draw(st.integers(0, n - 1).filter(lambda j: j != i))
        faulty[i], faulty[j] = faulty[j], faulty[i]
    assert run(faulty) == expected


@examples(100)
@given(frames=streams, data=st.data())
def test_any_prefix_then_eof_is_truncated(frames: list[bytes], data: st.DataObject) -> None:
    keep = data.draw(st.integers(0, len(frames) - 1))
    assert run(frames[:keep]) == TRUNCATED
    assert run(frames) != TRUNCATED


def test_end_token_constant() -> None:
    assert END_TOKEN == "EOS_FINALIZED"
