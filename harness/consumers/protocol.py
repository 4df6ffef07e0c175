"""The frames between the runner and a consumer worker (pure): a 4-byte big-endian length,
then that many bytes of UTF-8 JSON (one object).

Runner to worker: ``{"link": {...}}`` (a ``LinkInfo``), one call per frame. Worker to runner:
first ``{"ready": true}`` or ``{"ready": false, "problem": "..."}`` once the function is
imported, then one ``CallOutcome`` (``outcome.to_wire``) per call.
"""

from __future__ import annotations

import json
import struct
from typing import Any

HEADER = struct.Struct("!I")
#: the largest frame either side accepts (100,001 digests are about 9 MB)
MAX_FRAME_BYTES = 64 << 20


class FrameError(ValueError):
    """The peer sent something that is not a frame of this protocol."""


def encode(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(data)} bytes (at most {MAX_FRAME_BYTES})")
    return HEADER.pack(len(data)) + data


class FrameReader:
    """Bytes in, whole frames out, however the reads split them."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        frames: list[dict[str, Any]] = []
        while len(self._buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME_BYTES:
                raise FrameError(f"frame of {size} bytes (at most {MAX_FRAME_BYTES})")
            if len(self._buffer) < HEADER.size + size:
                break
            body = bytes(self._buffer[HEADER.size : HEADER.size + size])
            del self._buffer[: HEADER.size + size]
            try:
                value = json.loads(body)
            except ValueError as err:
                raise FrameError(f"frame is not JSON: {err}") from None
            if not isinstance(value, dict):
                raise FrameError("frame is not a JSON object")
            frames.append(value)
        return frames

    @property
    def pending(self) -> int:
        """Bytes of a frame not yet complete."""
        return len(self._buffer)
