"""A request body read as a stream, as Toxiproxy's ``json.Decoder`` reads it, with a bound.
Pure.

Toxiproxy decodes a body with ``json.NewDecoder(request.Body).Decode``: it reads as far as
the first JSON value goes and never looks at the rest, and it sets no bound on the value (a
50 MB proxy body is read and decoded whole). ``FirstValue`` takes a body piece by piece as it
arrives and says when enough has been read: once the first value is complete (or broken: an
error is as final as a value), or once more than ``limit`` bytes came without either. The
server then answers without waiting for the rest, which it reads and drops, so a client that
sends a huge body still gets its answer: 413 with Toxiproxy's error body (``bad request body:
http: request body too large``, the text of Go's ``http.MaxBytesReader``). Whether the value
is complete is asked of ``gojson.parse`` itself, at sizes that double (64 KiB, 128 KiB, ...),
so a body costs at most about twice one parse, and a value is complete exactly when Go's
decoder would have it.
"""

from __future__ import annotations

import codecs

from harness.control.gojson import GoJsonError, parse

#: the default bound on a request body (``tearline proxy --max-body``)
MAX_BODY_BYTES = 8 * 1024 * 1024
#: the first size at which the value is looked for (a smaller body is parsed once, whole)
FIRST_LOOK_BYTES = 64 * 1024


class FirstValue:
    """The body's bytes up to where its first JSON value is known to end, within ``limit``."""

    def __init__(self, limit: int = MAX_BODY_BYTES) -> None:
        self.limit = limit
        self.pieces: list[bytes] = []
        self.size = 0
        #: enough was read: the first value (or Go's error) lies in what was kept
        self.done = False
        #: more than ``limit`` bytes came before the first value ended
        self.too_large = False
        self._look_at = FIRST_LOOK_BYTES

    def feed(self, data: bytes) -> bool:
        """Take the next piece of the body; True once nothing more is needed (what comes
        after is dropped)."""
        if self.done or not data:
            return self.done
        self.size += len(data)
        if self.size > self.limit:
            self.too_large = self.done = True
            self.pieces.clear()
            return True
        self.pieces.append(data)
        if self.size >= self._look_at:
            self._look_at = self.size * 2
            self.done = _complete(self.body)
        return self.done

    @property
    def body(self) -> bytes:
        if len(self.pieces) > 1:
            self.pieces[:] = [b"".join(self.pieces)]
        return self.pieces[0] if self.pieces else b""


def _complete(body: bytes) -> bool:
    """Whether Go's decoder would stop within ``body``: a whole value, or an error that more
    bytes cannot undo (only a value cut short, ``unexpected EOF``, waits for more). A
    multi-byte character cut at the end is left for the next piece."""
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(body, final=False)
    try:
        parse(text)
    except GoJsonError as err:
        return err.text != "unexpected EOF"
    return True
