"""bogus_length: a frame's length prefix overwritten in place."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from harness.errors import FieldError
from harness.faults.bogus_length import BogusLength, encode_length
from harness.faults.items import Chunk
from tests.faults.conftest import chunks, cut_points, prefixed_frames, raises_field, run_fault

DATA, SPANS = prefixed_frames(b"hello", b"world!")  # [0,9) [9,19)


def test_bogus_length_rewrites_the_prefix() -> None:
    run = run_fault(BogusLength(frame=2, length=1000), chunks(DATA, 11), spans=SPANS)
    assert run.items == [
        Chunk(b"\x00\x00\x00\x05hello\x00\x00", 0),
        Chunk(b"\x03\xe8world!", 11),
    ]
    assert run.entries == [("bogus_length", 9, "frame 2: 1000")]


def test_bogus_length_zero() -> None:
    run = run_fault(BogusLength(frame=1, length=0), chunks(DATA), spans=SPANS)
    assert run.data == b"\x00\x00\x00\x00hello" + DATA[9:]


def test_bogus_length_that_does_not_fit_is_a_field_error() -> None:
    with pytest.raises(FieldError) as caught:
        run_fault(BogusLength(frame=1, length=2**32), chunks(DATA), spans=SPANS)
    assert (caught.value.path, caught.value.message) == (
        ("length",),
        "4294967296 does not fit a 4-byte length prefix",
    )


def test_encode_length() -> None:
    assert encode_length(258, 2) == b"\x01\x02"
    with pytest.raises(FieldError) as caught:
        encode_length(256, 1)
    assert caught.value.path == ("length",)


def test_bogus_length_of_a_frame_never_sent() -> None:
    run = run_fault(BogusLength(frame=2, length=1), chunks(DATA[:9]), spans=SPANS)
    assert (run.data, run.entries) == (DATA[:9], [])


@settings(max_examples=40, deadline=None)
@given(cuts=cut_points(len(DATA)))
def test_bogus_length_output_does_not_depend_on_input_chunking(cuts: list[int]) -> None:
    run = run_fault(BogusLength(frame=1, length=0x01020304), chunks(DATA, *cuts), spans=SPANS)
    assert run.data == b"\x01\x02\x03\x04hello" + DATA[9:]
    # Rewritten in place: the reads keep their sizes.
    assert [(c.offset, len(c.data)) for c in run.items if isinstance(c, Chunk)] == [
        (c.offset, len(c.data)) for c in chunks(DATA, *cuts)
    ]


@pytest.mark.parametrize(
    ("frame", "length", "field"), [(0, 1, "frame"), (1, -1, "length"), (1, 2**64, "length")]
)
def test_bogus_length_rejects_bad_config(frame: int, length: int, field: str) -> None:
    with raises_field(field):
        BogusLength(frame=frame, length=length)
