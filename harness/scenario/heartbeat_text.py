"""Deprecation ``heartbeat-text-alone``: a ``stall`` with ``heartbeat_text`` and no ``heartbeat``.

Until 2026-12-01 a stall had only ``heartbeat_text``, written during the stall as it is (its
UTF-8 bytes, framed by the author: ``": ping\\n\\n"`` on an SSE body ended by closing,
``"8\\r\\n: ping\\n\\n\\r\\n"`` as an HTTP chunk of a chunked one). Since then ``heartbeat`` says
which heartbeat to write and frames it for the link, and ``heartbeat_text`` alone was refused.
It is read again as what it meant, in one of two new forms that write the same bytes:

- ``heartbeat: sse-comment`` (or ``grpc-ping``), where the text is byte for byte the heartbeat
  that kind writes on this link: the file then says what it means (``heartbeat_text`` stays
  only when its text is not the kind's default);
- else ``heartbeat: raw`` before it: the text, written as it is, as before.

The first needs the link to be known and fixed (its framing, and for SSE its body, not swept),
the text written in the fault itself and not swept; a node shared by links that differ takes
the second. A text that is the framing's heartbeat only almost (``": ping\\n\\n"``: a comment
and a blank line, which dispatches a partial event) stays raw: the rewrite never changes a byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config.issues import KeyPath, render_path
from harness.config.nodes import line_of
from harness.faults.heartbeat import http2_ping, sse_comment
from harness.scenario.edits import Edit, Insert, Replace, render
from harness.scenario.versions import Finding, Rewrite
from harness.scenario.views import ScenarioView, Site, owner_of, text_of

#: the text an ``sse-comment`` writes when no ``heartbeat_text`` is given
_SSE_DEFAULT = "ping"
_CHUNK = re.compile(rb"([0-9a-fA-F]+)\r\n(.*)\r\n", re.DOTALL)
_COMMENT = re.compile(rb": ([^\r\n]+)\n")


def native_heartbeat(
    framing: str | None, chunked: bool, raw: bytes
) -> tuple[str, str | None] | None:
    """The heartbeat kind (and its text, None for the kind's default) that writes exactly
    ``raw`` on this framing, or None. (No text is ever a WebSocket ping: a ping frame starts
    with byte 0x89, which no UTF-8 text does.)"""
    if framing == "grpc" and raw == http2_ping():
        return "grpc-ping", None
    if framing != "sse":
        return None
    body = raw
    if chunked:
        chunk = _CHUNK.fullmatch(raw)
        if chunk is None or int(chunk[1], 16) != len(chunk[2]):
            return None
        body = chunk[2]
    comment = _COMMENT.fullmatch(body)
    if comment is None:
        return None
    try:
        text = comment[1].decode()
    except UnicodeDecodeError:
        return None
    if sse_comment(text, chunked) != raw:  # e.g. an upper-case chunk size
        return None
    return "sse-comment", None if text == _SSE_DEFAULT else text


@dataclass(frozen=True, slots=True)
class HeartbeatTextAlone:
    """``heartbeat_text`` without ``heartbeat`` on a stall (see the module)."""

    id: str = "heartbeat-text-alone"
    since: str = "2026-12-02"
    up_to: int | None = None
    summary: str = (
        "`heartbeat_text: T` alone -> `heartbeat: raw` before it, or the framing's own kind"
        " (`heartbeat: sse-comment`, `grpc-ping`) where T is exactly that heartbeat"
    )
    old: str = "heartbeat_text without heartbeat writes its text as it is"

    def find(self, view: ScenarioView) -> Iterator[Finding]:
        for site in view.faults():
            pairs = view.pairs(site.node)
            if text_of(pairs.get("kind", (None, None))[1]) != "stall" or "heartbeat" in pairs:
                continue
            if site.swept_as is not None and view.swept((*site.swept_as, "heartbeat")):
                continue  # not a form of the old format: the validator's to report
            if "heartbeat_text" in pairs:
                yield from self._written(view, site)
            elif site.swept_as is not None:
                yield from self._swept(view, site)

    def _written(self, view: ScenarioView, site: Site) -> Iterator[Finding]:
        key, value = view.pairs(site.node)["heartbeat_text"]
        text = text_of(value)
        owner = owner_of(site.node, "heartbeat_text")
        if not text or owner is None:
            return  # empty or not text: the validator reports it
        raw = Rewrite((Insert(owner, key, "heartbeat", "raw"),), "`heartbeat: raw` before it")
        native = self._native(view, site, owner, key, value, text)
        path = (*site.path, "heartbeat_text")
        yield Finding(self.id, line_of(key), path, self.old, native or raw, key, raw)

    def _native(
        self,
        view: ScenarioView,
        site: Site,
        owner: MappingNode,
        key: ScalarNode,
        value: Node,
        text: str,
    ) -> Rewrite | None:
        """The framing's own kind, when the text is exactly its heartbeat on a known link."""
        fixed = site.swept_as is None or not view.swept((*site.swept_as, "heartbeat_text"))
        fixed = fixed and not view.swept(("link", "framing"))
        bodies = (("link", "framing_options", key) for key in ("sse_body", "http_body"))
        fixed = fixed and not any(view.swept(body) for body in bodies)
        if not fixed or owner is not site.node or not isinstance(value, ScalarNode):
            return None
        if value.start_mark.index < key.end_mark.index:  # an alias: its anchor is elsewhere
            return None
        framing = text_of(view.get("link", "framing"))
        options = ("link", "framing_options")
        body = text_of(view.get(*options, "http_body")) or text_of(view.get(*options, "sse_body"))
        chunked = body != "close"
        found = native_heartbeat(framing, chunked, text.encode())
        if found is None:
            return None
        kind, kind_text = found
        if kind_text is None:
            edits: tuple[Edit, ...] = (
                Replace(owner, key, "heartbeat"),
                Replace(owner, value, kind),
            )
            return Rewrite(edits, f"`heartbeat: {kind}` instead (the heartbeat this text is)")
        edits = (Insert(owner, key, "heartbeat", kind), Replace(owner, value, kind_text))
        advice = f"`heartbeat: {kind}` and `heartbeat_text: {render(kind_text)}` instead"
        return Rewrite(edits, advice + " (the heartbeat this text is)")

    def _swept(self, view: ScenarioView, site: Site) -> Iterator[Finding]:
        """A sweep of ``faults[i].heartbeat_text`` over a stall that writes none: each case
        was a raw heartbeat. The stall gets ``heartbeat: raw`` and, since a raw heartbeat
        needs a text, the first swept one (each case replaces it with its own)."""
        assert site.swept_as is not None
        wanted: KeyPath = (*site.swept_as, "heartbeat_text")
        for axis in view.axes():
            if axis.parts != wanted or not isinstance(axis.values, SequenceNode):
                continue
            first = text_of(axis.values.value[0]) if axis.values.value else None
            before = _neighbour(site.node)
            if not first or before is None:
                return  # not text: the sweep's reader reports it
            edits = (
                Insert(site.node, before, "heartbeat", "raw"),
                Insert(site.node, before, "heartbeat_text", first),
            )
            where = render_path(site.path)
            advice = f"`heartbeat: raw` and `heartbeat_text: {render(first)}` in {where}"
            rewrite = Rewrite(edits, advice + " (each case still takes its own text)")
            old = "a sweep of heartbeat_text over a stall without heartbeat"
            path = ("sweep", axis.key.value)
            yield Finding(self.id, line_of(axis.key), path, old, rewrite, site.node, rewrite)


def _neighbour(node: MappingNode) -> ScalarNode | None:
    """The key written in ``node`` before which ``heartbeat`` goes: its
    ``heartbeat_interval_ms``, else its first key."""
    keys = [
        key for key, _ in node.value if isinstance(key, ScalarNode) and key.tag.endswith(":str")
    ]
    return next((k for k in keys if k.value == "heartbeat_interval_ms"), keys[0] if keys else None)
