"""pytest fixtures: tearline's fault proxy and scenario library inside a team's own tests,
the role toxiproxy-python plays for Toxiproxy. Enable them in your root ``conftest.py``::

    pytest_plugins = ["harness.pytest_plugin.fixtures"]

- ``tearline_proxy``: a factory. ``tearline_proxy("127.0.0.1:8080", faults=[...])`` starts the
  fault proxy in front of your service with the given faults (written as in a scenario, by byte
  ``offset`` or ``after_ms``) and returns a ``RunningProxy``: its ``host``, ``port``, ``url()``
  and the faults that fired. Every proxy stops when the test ends.
- ``tearline_scenarios``: a function that runs scenario files against your consumer function
  (``"my_pkg.client:consume"``) and returns the judged, graded results.

Both run tearline in a thread of their own, so they work from plain tests and from async ones
(pytest-trio, pytest-asyncio) alike. See ``docs/python-consumers.md``.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from harness.errors import SetupError
from harness.evidence.timeline import Timeline
from harness.faults.config import Fault
from harness.judging.results import CaseResult, Grade, Outcome
from harness.reports.refused import RefusedFile, refused_files
from harness.scenario.loader import ScenarioFormatWarning
from reference_impl.defaults import LOOPBACK

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0

FaultSpec = Fault | dict[str, Any]


def parse_faults(faults: Sequence[FaultSpec], framing: str | None = None) -> tuple[Fault, ...]:
    """Faults written as in a scenario (mappings) or already built; a mistake raises
    ``ScenarioError`` naming the key, a position no live stream of ``framing`` can have (a
    length field where the framing has none) raises ``SetupError``."""
    from harness.link.case_wire import check_placeable  # noqa: PLC0415
    from harness.link.live import LinkTraits  # noqa: PLC0415
    from harness.scenario import load_text  # noqa: PLC0415

    written = [f for f in faults if isinstance(f, dict)]
    parsed: tuple[Fault, ...] = ()
    if written:
        text = json.dumps(
            {
                "name": "fixture",
                "description": "faults of a tearline_proxy fixture",
                "link": {"framing": framing or "length-prefixed", "payload": "messages"},
                "faults": written,
                "expect": {"complete": False},
            }
        )
        (scenario,) = load_text(text, "tearline_proxy")
        parsed = scenario.faults
    from_text = iter(parsed)  # in the order written, between the built ones
    everything = tuple(next(from_text) if isinstance(f, dict) else f for f in faults)
    problem = check_placeable(everything, LinkTraits(framing))
    if problem is not None:
        raise SetupError(problem.message, path=problem.path)
    return everything


def _address(upstream: str | tuple[str, int]) -> tuple[str, int]:
    if isinstance(upstream, tuple):
        return upstream
    host, _, port = upstream.rpartition(":")
    if not host or not port.isdigit():
        raise SetupError(f"upstream {upstream!r} is not host:port")
    return host.strip("[]"), int(port)


@dataclass
class RunningProxy:
    """A fault proxy running in a thread of its own, in front of ``upstream``."""

    upstream: tuple[str, int]
    host: str = LOOPBACK
    port: int = 0
    _timeline: Timeline = field(default_factory=Timeline, repr=False)
    _token: trio.lowlevel.TrioToken | None = field(default=None, repr=False)
    _stop: trio.Event | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _errors: list[str] = field(default_factory=list, repr=False)

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://{self.host}:{self.port}{path}"

    def _read(self, what: Callable[[], Any]) -> Any:
        if self._token is None:
            return what()
        try:
            return trio.from_thread.run_sync(what, trio_token=self._token)
        except trio.RunFinishedError:
            return what()

    def fired(self) -> list[tuple[int, str, str, int | None, str]]:
        """The faults that fired so far: (connection, direction, name, offset, detail)."""
        faults = self._read(lambda: list(self._timeline.faults))
        return [(f.connection, f.direction, f.name, f.offset, f.detail) for f in faults]

    @property
    def errors(self) -> list[str]:
        """What went wrong on the proxy's side (an unreachable upstream)."""
        return list(self._read(lambda: list(self._errors)))

    def stop(self) -> None:
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        self._token = None


def start_proxy(
    upstream: str | tuple[str, int],
    faults: Sequence[FaultSpec] = (),
    *,
    seed: int = 0,
    framing: str | None = None,
    listen: tuple[str, int] = (LOOPBACK, 0),
) -> RunningProxy:
    """Start the fault proxy in a thread; ``RunningProxy.stop()`` ends it."""
    from harness.link.live import LinkTraits  # noqa: PLC0415
    from harness.running.assembly import fault_proxy  # noqa: PLC0415

    built = parse_faults(faults, framing)
    running = RunningProxy(_address(upstream), host=listen[0])
    started: queue.Queue[BaseException | None] = queue.Queue()

    async def serve() -> None:
        proxy = fault_proxy(
            running.upstream,
            built,
            traits=LinkTraits(framing),
            seed=seed,
            timeline=running._timeline,
        )
        running._errors = proxy.errors
        running._stop = trio.Event()
        running._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            running.port = await nursery.start(proxy.serve, listen[0], listen[1])
            started.put(None)
            await running._stop.wait()
            nursery.cancel_scope.cancel()

    def thread() -> None:
        try:
            trio.run(serve)
        except BaseException as err:  # reported to the test that started it
            started.put(err)

    running._thread = threading.Thread(target=thread, name="tearline-proxy", daemon=True)
    running._thread.start()
    try:
        problem = started.get(timeout=START_TIMEOUT_S)
    except queue.Empty:
        raise SetupError(f"the proxy did not start within {START_TIMEOUT_S:g} s") from None
    if problem is not None:
        raise SetupError(f"the proxy could not start: {problem!r}")
    return running


def proxy_factory() -> Iterator[Callable[..., RunningProxy]]:
    """A factory of fault proxies (``start_proxy``), all stopped after the test: the body of
    the ``tearline_proxy`` fixture (``harness/pytest_plugin/__init__.py`` registers it)."""
    proxies: list[RunningProxy] = []

    def make(
        upstream: str | tuple[str, int], faults: Sequence[FaultSpec] = (), **options: Any
    ) -> RunningProxy:
        proxy = start_proxy(upstream, faults, **options)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()


@dataclass(frozen=True)
class ScenarioResults:
    """The judged cases of one ``run_scenarios`` call, and the files it could not run."""

    results: tuple[CaseResult, ...]
    #: the scenario files that did not load or expand: the others' cases ran
    refused: tuple[RefusedFile, ...] = ()

    @property
    def failed(self) -> list[CaseResult]:
        """What is not ok: each file left out (an ``error`` result naming its problems, so
        ``assert not results.failed`` fails on it), then the cases graded ``failed`` or not
        run or proven (error, inconclusive)."""
        return [*map(_refused_result, self.refused), *(r for r in self.results if not r.ok)]

    def count(self, grade: Grade) -> int:
        return sum(1 for r in self.results if r.grade is grade)

    def summary(self) -> str:
        """One line per case that is not ok, with its diagnosis and replay command; each file
        left out with its problems."""
        from harness.judging.results import replay_command  # noqa: PLC0415

        failing = [r for r in self.results if not r.ok]
        lines = [f"{len(failing)} of {len(self.results)} cases not ok"]
        if self.refused:
            lines[0] += f"; {len(self.refused)} scenario file(s) not run"
        lines += [f"not run: {refused.text}" for refused in self.refused]
        lines += [
            f"{r.case_id}: {r.outcome} ({r.grade}): {r.diagnosis}\n  {replay_command(r)}"
            for r in failing
        ]
        return "\n".join(lines)


def _refused_result(refused: RefusedFile) -> CaseResult:
    """A file left out, as the ``error`` result of no case."""
    first = refused.problems[0].line if refused.problems else 0
    return CaseResult(
        case_id=f"{refused.file}::(not loaded)",
        scenario="",
        file=refused.file,
        line=first,
        seed=0,
        outcome=Outcome.ERROR,
        diagnosis=refused.text,
        checks=(),
        framing="",
        payload="",
        fault_kinds=(),
        expected="the file loads",
        params=(),
        duration_s=0.0,
        report=None,
        timeline=Timeline(),
    )


def run_scenarios(
    function: str,
    paths: Sequence[str] = ("scenarios",),
    *,
    select: str = "",
    framings: Sequence[str] = (),
    payloads: Sequence[str] = (),
    budget: int | None = None,
    in_flight: int = 4,
) -> ScenarioResults:
    """Run the scenario files at ``paths`` (only the cases over ``framings``/``payloads``, at
    most ``budget``) against the consumer function ``function`` (``module:function``). A file
    that does not load is left out and listed in ``refused``; the others' cases run. Each
    warning of a file is a ``ScenarioFormatWarning``."""
    from harness.link.library import cases_of_files  # noqa: PLC0415
    from harness.matrix.sampling import for_function, unsupported, within_budget  # noqa: PLC0415
    from harness.running.execute import RunSettings, run_all  # noqa: PLC0415

    library = cases_of_files(paths, select)
    for warning in library.warnings:
        warnings.warn(ScenarioFormatWarning(str(warning)), stacklevel=2)
    cases = [
        case
        for case in library.cases
        if (not framings or case.scenario.link.framing in framings)
        and (not payloads or case.scenario.link.payload in payloads)
        and not unsupported(case)
    ]
    picked = [for_function(case, function) for case in within_budget(cases, budget)]
    done: list[CaseResult] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            done.extend(run_all(picked, RunSettings(1, in_flight)))
        except BaseException as err:  # re-raised in the test's thread
            failure.append(err)

    worker = threading.Thread(target=work, name="tearline-scenarios")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return ScenarioResults(tuple(done), refused_files(library.problems))


def scenario_runner() -> Iterator[Callable[..., ScenarioResults]]:
    """``run_scenarios``; the consumer workers it started stop after the test: the body of
    the ``tearline_scenarios`` fixture."""
    from harness.workers.pool import close_default_pool  # noqa: PLC0415

    yield run_scenarios
    close_default_pool()
