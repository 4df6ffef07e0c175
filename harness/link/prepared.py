"""The prepared link: what the harness knows of a case's stream before it runs, computed once.

One dry run of the reference codecs in memory (``reference_impl.link.spec.expected_wire``) gives the
bytes the reference producer writes on a clean connection and where each message sits; the
framing layer says where a message is committed and where its length prefix is
(``reference_impl.framing.layout``); the payload layer says which messages carry the result.
The runner, the sweep expansion (``to: end``) and the locator ask this object; none of them does
byte arithmetic of its own.

``prepare`` caches by link, so a scenario's expansion and its cases share one dry run per
process.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from harness.errors import FieldError
from reference_impl.errors import CodecError
from reference_impl.framing import layout
from reference_impl.link.spec import LinkSpec, content_messages, expected_wire, iter_payload
from reference_impl.report import preview

#: message spans a result keeps for the report's drawing
MAX_SPANS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class PreparedLink:
    spec: LinkSpec
    #: the consumer's request on a clean connection (the reference consumer's)
    request: bytes
    #: the producer->consumer bytes of one clean connection
    wire: bytes
    #: ``[start, end)`` of the bytes written for message i+1 (framing overhead included)
    spans: tuple[tuple[int, int], ...]
    #: the payload of each message
    messages: tuple[bytes, ...]
    #: how many leading messages carry the result (the rest only prove its end)
    content_messages: int

    @property
    def stream_length(self) -> int:
        return len(self.wire)

    def frame_length(self, index: int) -> int:
        """Bytes message ``index`` (1-based) occupies on the wire; 0 if there is none."""
        if not 1 <= index <= len(self.spans):
            return 0
        start, end = self.spans[index - 1]
        return end - start

    @property
    def commit_end(self) -> int | None:
        """Where the last content message is committed (handed on), on the clean wire."""
        last = self.content_messages
        if not last or last > len(self.spans):
            return None
        return layout.commit_end(self.spec.framing, self.spec.options, self.spans[last - 1])

    def length_field(self, index: int) -> tuple[int, int] | None:
        """``(offset, width)`` of message ``index``'s length prefix; None if it has none."""
        start, end = self.spans[index - 1]
        data = self.messages[index - 1]
        return layout.length_field(self.spec.framing, self.wire, (start, end), data)

    def digests(self) -> tuple[str, ...]:
        return tuple(hashlib.sha256(data).hexdigest() for data in self.messages)

    def previews(self) -> dict[str, str]:
        """A short text of each message, by digest (for diagnoses)."""
        return {hashlib.sha256(data).hexdigest(): preview(data) for data in self.messages}


@functools.lru_cache(maxsize=8)  # a big stream is big: keep few
def prepare(spec: LinkSpec) -> PreparedLink:
    """The prepared link of ``spec``; ``FieldError`` if the reference link cannot make it."""
    try:
        expected = expected_wire(spec)
    except (CodecError, ValueError) as err:  # a codec refuses what it cannot frame
        raise FieldError(f"the reference link cannot make this stream ({err})") from None
    return PreparedLink(
        spec=spec,
        request=expected.request,
        wire=expected.wire,
        spans=expected.spans,
        messages=() if expected.refused else tuple(m.data for m in iter_payload(spec)),
        content_messages=0 if expected.refused else content_messages(spec),
    )
