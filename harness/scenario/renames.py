"""Deprecations that need no code of their own: a key renamed, a value renamed, a key removed.

Each is one line of the table in ``harness.scenario.formats``, for example::

    RenamedKey("slow-consumer-pause", "2027-01-10", where="faults", old="pause_ms",
               new="stop_ms", kinds=("slow_consumer",))
    RenamedValue("sse-body-close", "2027-01-10", where="link.framing_options",
                 key="sse_body", old="close", new="close-delimited")
    RemovedKey("grading-needs", "2026-12-02", where="expect.grading", key="needs",
               why="what a case needs is derived from it")

``where`` is ``faults`` (every fault, or those of ``kinds``), a section's key path
(``link.consumer``), or ``""`` (the scenario's own keys). Sweeps follow: an axis that names the
old key is renamed with it (``faults[0].pause_ms`` -> ``faults[0].stop_ms``), and a listed value
that is the old value becomes the new one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from yaml.nodes import ScalarNode, SequenceNode

from harness.config.issues import KeyPath, render_path
from harness.config.nodes import line_of
from harness.config.paths import parse_path
from harness.scenario.edits import Remove, Replace, render
from harness.scenario.versions import Finding, Rewrite
from harness.scenario.views import ScenarioView, Site, owner_of, text_of


def _sites(view: ScenarioView, where: str, kinds: tuple[str, ...]) -> Iterator[Site]:
    if where == "faults":
        for site in view.faults():
            kind = text_of(view.pairs(site.node).get("kind", (None, None))[1])
            if not kinds or kind in kinds:
                yield site
    elif where == "":
        yield Site(view.node, (), ())
    else:
        yield from view.sections(parse_path(where))


def _prefixes(view: ScenarioView, where: str, kinds: tuple[str, ...]) -> list[KeyPath]:
    """The key paths a sweep axis names the mappings at ``where`` by."""
    if where != "faults":
        return [parse_path(where)] if where else [()]
    written = view.get("faults")
    items = written.value if isinstance(written, SequenceNode) else []
    return [
        ("faults", i)
        for i, item in enumerate(items)
        if not kinds or text_of(view.pairs(item).get("kind", (None, None))[1]) in kinds
    ]


@dataclass(frozen=True, slots=True)
class RenamedKey:
    """Key ``old`` of the mappings at ``where`` is now called ``new``."""

    id: str
    since: str
    where: str
    old: str
    new: str
    kinds: tuple[str, ...] = ()
    up_to: int | None = None

    @property
    def summary(self) -> str:
        return f"`{self.old}` -> `{self.new}` ({self.where or 'scenario'})"

    def find(self, view: ScenarioView) -> Iterator[Finding]:
        advice = f"`{self.new}` instead"
        for site in _sites(view, self.where, self.kinds):
            pairs = view.pairs(site.node)
            owner = owner_of(site.node, self.old)
            if owner is None or self.new in pairs:  # both written: the validator says so
                continue
            key = pairs[self.old][0]
            rewrite = Rewrite((Replace(owner, key, self.new),), advice)
            old = f"key {self.old}"
            yield Finding(self.id, line_of(key), (*site.path, self.old), old, rewrite, key)
        for prefix in _prefixes(view, self.where, self.kinds):
            yield from self._axes(view, prefix)

    def _axes(self, view: ScenarioView, prefix: KeyPath) -> Iterator[Finding]:
        """Sweep axes that name the old key under ``prefix``."""
        sweep = view.get("sweep")
        for axis in view.axes():
            size = len(prefix)
            if axis.parts[:size] != prefix or axis.parts[size : size + 1] != (self.old,):
                continue
            owner = owner_of(sweep, axis.key.value) if sweep is not None else None  # type: ignore[arg-type]
            if owner is None:
                continue
            renamed = render_path((*prefix, self.new, *axis.parts[size + 1 :]))
            rewrite = Rewrite((Replace(owner, axis.key, renamed),), f"`{renamed}` instead")
            path = ("sweep", axis.key.value)
            yield Finding(
                self.id, line_of(axis.key), path, f"axis {axis.key.value}", rewrite, axis.key
            )


@dataclass(frozen=True, slots=True)
class RenamedValue:
    """Value ``old`` of key ``key`` at ``where`` is now spelt ``new``."""

    id: str
    since: str
    where: str
    key: str
    old: str
    new: str
    kinds: tuple[str, ...] = ()
    up_to: int | None = None

    @property
    def summary(self) -> str:
        return f"`{self.key}: {self.old}` -> `{self.key}: {self.new}` ({self.where or 'scenario'})"

    def find(self, view: ScenarioView) -> Iterator[Finding]:
        rewrite_words = f"`{self.key}: {render(self.new)}` instead"
        old = f"{self.key}: {render(self.old)}"
        for site in _sites(view, self.where, self.kinds):
            pair = view.pairs(site.node).get(self.key)
            owner = owner_of(site.node, self.key)
            if pair is None or owner is None or not isinstance(pair[1], ScalarNode):
                continue
            if text_of(pair[1]) == self.old:
                rewrite = Rewrite((Replace(owner, pair[1], self.new),), rewrite_words)
                path = (*site.path, self.key)
                yield Finding(self.id, line_of(pair[1]), path, old, rewrite, pair[1])
        for prefix in _prefixes(view, self.where, self.kinds):
            yield from self._axis_values(view, (*prefix, self.key), old, rewrite_words)

    def _axis_values(
        self, view: ScenarioView, parts: KeyPath, old: str, words: str
    ) -> Iterator[Finding]:
        for axis in view.axes():
            if axis.parts != parts or not isinstance(axis.values, SequenceNode):
                continue
            for i, item in enumerate(axis.values.value):
                if isinstance(item, ScalarNode) and text_of(item) == self.old:
                    rewrite = Rewrite((Replace(axis.values, item, self.new),), words)
                    path = ("sweep", axis.key.value, i)
                    yield Finding(self.id, line_of(item), path, old, rewrite, item)


@dataclass(frozen=True, slots=True)
class RemovedKey:
    """Key ``key`` of the mappings at ``where`` means nothing any more (``why``): it is read as
    not written, and ``upgrade`` takes it out."""

    id: str
    since: str
    where: str
    key: str
    why: str
    kinds: tuple[str, ...] = ()
    up_to: int | None = None

    @property
    def summary(self) -> str:
        return f"`{self.key}` ({self.where or 'scenario'}) removed: {self.why}"

    def find(self, view: ScenarioView) -> Iterator[Finding]:
        advice = f"nothing: {self.why}"
        for site in _sites(view, self.where, self.kinds):
            owner = owner_of(site.node, self.key)
            if owner is None:
                continue
            key = view.pairs(site.node)[self.key][0]
            rewrite = Rewrite((Remove(owner, key),), advice)
            old = f"key {self.key}"
            yield Finding(self.id, line_of(key), (*site.path, self.key), old, rewrite, key)
