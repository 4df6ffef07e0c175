"""The search: Hypothesis's engine generates fault plans, and shrinks the first failure.

``Hunt.run`` hands Hypothesis a test over ``plans(space)`` whose body asks ``check`` (one plan
against the reference consumer and the hunted one; ``live.py`` runs real cases, tests pass a
pure function) and raises ``ConsumerFailedError`` when the consumer failed where the reference
passed.
Hypothesis does the rest: it generates plans until one fails, then shrinks it (fewest faults,
simplest kinds, shortest stream, smallest offsets; ``strategies.py`` orders every choice for
that), and saves it in its example database, which the next hunt of the same consumer and link
replays first. No shrinker is written here.

What this module adds around the engine:

- **"Fails the same way"**: while a failure is being shrunk, only plans with the same
  normalised diagnosis (``diagnosis.failure_key``) count as failing; another failure is noted
  and counts as a pass.
- **Budgets**: ``budget`` plans are tried before giving up (``BudgetSpentError`` ends the
  engine; it is not an ``Exception``, so Hypothesis does not take it for a failure);
  ``shrink_budget`` fresh plans at most are run while shrinking, after which every plan not seen
  yet counts as passing, so the shrinker stops at what it has.
- **Memo**: a plan is run once; asked again (Hypothesis replays, shrink candidates repeat), its
  first judgement is the answer, so the engine always sees a consistent test.
- **Confirmation**: a first failure is run twice more before it counts (a failure that does
  not reproduce is a timing accident, and counts as a pass; a consumer killed at the deadline is
  run once more: each run of a hang costs a deadline, and a loaded machine can delay a
  program's start past one); the shrunk plan is run again at the end, and if it does not
  reproduce, the smallest plan that does is reported.
- **``--all``**: more rounds, each with its own seed and database folder, in which failures
  already found count as passes, until the budget is spent or a round finds nothing.
- **Target**: ``target(judged.effect)`` leans the search toward plans whose faults change what
  the reference consumer concludes: those reach the consumer's error paths.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, reject, seed, target
from hypothesis import settings as hypothesis_settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import HypothesisException

from harness.hunt.diagnosis import Judged, Standing, killed_at_deadline
from harness.hunt.plan import Plan
from harness.search.strategies import Space, plans

Check = Callable[[Plan], Judged]
#: runs a first failure must fail again, the same way, before it counts
CONFIRMATIONS = 2
#: ... or once, for a hang (each run of it costs a whole deadline)
HANG_CONFIRMATIONS = 1
#: how many failing plans of a shrink are tried when the shrunk one does not reproduce
CONFIRM_TRIES = 3
TARGET_LABEL = "fault effect on the reference"
#: Hypothesis examples allowed per plan of the budget (most examples are plans not seen yet)
EXAMPLES_PER_CASE = 20


class ConsumerFailedError(Exception):
    """The consumer failed a plan the reference consumer passed (raised for Hypothesis)."""

    def __init__(self, judged: Judged) -> None:
        super().__init__(f"{judged.key}: {judged.diagnosis}")
        self.judged = judged


class BudgetSpentError(BaseException):
    """The hunt's budget is spent: ends the engine without a failure (a ``BaseException``, as
    ``KeyboardInterrupt``, so Hypothesis lets it through instead of shrinking it)."""


@dataclass(frozen=True, slots=True)
class HuntSettings:
    seed: int
    #: plans tried before giving up
    budget: int = 200
    #: fresh plans run while shrinking one failure
    shrink_budget: int = 200
    #: go on after the first failure, for failures with other diagnoses
    all_failures: bool = False
    #: Hypothesis's example database folder (None: none)
    database: Path | None = None


@dataclass(frozen=True, slots=True)
class Event:
    """Progress: ``case`` (a plan was run), ``failure`` (a first failure, confirmed),
    ``flaky`` (a failure that did not reproduce), ``shrink`` (a smaller failing plan),
    ``shrunk`` (the round's answer), ``reference`` (the reference consumer failed a plan),
    ``round`` (an ``--all`` round starts)."""

    kind: str
    cases: int
    judged: Judged | None = None
    shrink_steps: int = 0
    round: int = 0


@dataclass(frozen=True, slots=True)
class Found:
    """One distinct failure, shrunk."""

    judged: Judged
    #: the plan that failed first, before shrinking
    first: Plan
    #: plans tried until the first failure (that one included)
    cases_until: int
    #: fresh plans run while shrinking
    shrink_steps: int
    #: seconds from the start of the hunt until this failure was shrunk and confirmed
    seconds: float
    #: False when the shrunk plan did not fail again on a second run (timing), and a larger
    #: failing plan of the shrink is reported instead
    reproduced: bool = True

    @property
    def plan(self) -> Plan:
        return self.judged.plan

    @property
    def key(self) -> str:
        return self.judged.key


@dataclass(slots=True)
class HuntResult:
    found: list[Found] = field(default_factory=list)
    #: plans tried (generation; not counting shrink steps)
    cases: int = 0
    #: runs in all, shrinking and confirmation included
    runs: int = 0
    discarded: int = 0
    #: plans the reference consumer failed, one per distinct key
    reference_problems: list[Judged] = field(default_factory=list)
    seconds: float = 0.0
    budget_spent: bool = False


@dataclass(slots=True)
class _Round:
    index: int
    #: the key being shrunk (None while generating)
    key: str | None = None
    first: Plan | None = None
    cases_until: int = 0
    shrink_steps: int = 0
    #: failing plans with ``key``, in the order they were found (later ones are smaller)
    failing: list[Judged] = field(default_factory=list)


def round_seed(base: int, index: int) -> int:
    """Round 0 uses the hunt's seed; later rounds a seed derived from it."""
    if index == 0:
        return base
    digest = hashlib.sha256(f"{base}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def database_key(command: str, space: Space) -> str:
    """The database folder of a consumer and a link."""
    text = f"{command}\0{space.framing}\0{space.payload}\0{space.profile}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Hunt:
    def __init__(
        self,
        space: Space,
        check: Check,
        settings: HuntSettings,
        progress: Callable[[Event], None] = lambda _event: None,
    ) -> None:
        self.space = space
        self._check = check
        self.settings = settings
        self._progress = progress
        self._memo: dict[Plan, Judged] = {}
        self._known: set[str] = set()
        self._problems: dict[str, Judged] = {}
        self._started = 0.0
        self.result = HuntResult()

    def run(self) -> HuntResult:
        self._started = time.monotonic()
        index = 0
        while self.result.cases < self.settings.budget:
            if index:
                self._progress(Event("round", self.result.cases, round=index))
            found = self._round(_Round(index))
            if found is None:
                break
            self.result.found.append(found)
            self._known.add(found.key)
            if not self.settings.all_failures:
                break
            index += 1
        self.result.budget_spent = self.result.cases >= self.settings.budget
        self.result.reference_problems = list(self._problems.values())
        self.result.seconds = time.monotonic() - self._started
        return self.result

    # --- one Hypothesis run -------------------------------------------------------------------

    def _hypothesis_settings(self, state: _Round) -> hypothesis_settings:
        folder = self.settings.database
        database = (
            None
            if folder is None
            else DirectoryBasedExampleDatabase(str(folder / f"round-{state.index}"))
        )
        phases = [Phase.generate, Phase.target, Phase.shrink]
        if database is not None:
            phases.insert(0, Phase.reuse)
        return hypothesis_settings(
            database=database,
            # the budget counts fresh plans (BudgetSpentError ends the run); Hypothesis counts
            # every valid example, repeats of plans already run too
            max_examples=EXAMPLES_PER_CASE * max(1, self.settings.budget - self.result.cases),
            phases=phases,
            deadline=None,
            derandomize=False,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            print_blob=False,
        )

    def _round(self, state: _Round) -> Found | None:
        @self._hypothesis_settings(state)
        @seed(round_seed(self.settings.seed, state.index))
        @given(plans(self.space))
        def probe(plan: Plan) -> None:
            self._probe(plan, state)

        try:
            probe()
        except ConsumerFailedError as failure:
            return self._confirmed(failure.judged, state)
        except BudgetSpentError:
            return None
        except HypothesisException:  # e.g. no valid plan at all (Unsatisfiable)
            if state.failing:
                return self._confirmed(state.failing[-1], state)
            return None
        return None

    def _probe(self, plan: Plan, state: _Round) -> None:
        judged = self._memo.get(plan)
        if judged is None:
            judged = self._fresh(plan, state)
            if judged is None:  # the shrink budget is spent: not seen counts as passing
                return
        if judged.standing in (Standing.INVALID, Standing.REFERENCE):
            reject()
        target(judged.effect, label=TARGET_LABEL)
        if judged.standing is not Standing.FAILURE or judged.key in self._known:
            return
        if state.key is None:
            state.key, state.first, state.cases_until = judged.key, plan, self.result.cases
            self._progress(Event("failure", self.result.cases, judged, round=state.index))
        if judged.key == state.key:
            if all(seen is not judged for seen in state.failing):
                if state.failing:
                    self._progress(
                        Event("shrink", self.result.cases, judged, state.shrink_steps, state.index)
                    )
                state.failing.append(judged)
            raise ConsumerFailedError(judged)

    def _fresh(self, plan: Plan, state: _Round) -> Judged | None:
        """Run a plan not seen before; None when shrinking and its budget is spent."""
        shrinking = state.key is not None
        if shrinking:
            if state.shrink_steps >= self.settings.shrink_budget:
                return None
            state.shrink_steps += 1
        elif self.result.cases >= self.settings.budget:
            raise BudgetSpentError
        else:
            self.result.cases += 1
        judged = self._run(plan)
        if not shrinking:
            judged = self._first_failure_confirmed(judged, state)
        self._memo[plan] = judged
        if not shrinking:
            self._progress(Event("case", self.result.cases, judged, round=state.index))
        return judged

    def _run(self, plan: Plan) -> Judged:
        self.result.runs += 1
        judged = self._check(plan)
        if judged.standing is Standing.INVALID:
            self.result.discarded += 1
        elif judged.standing is Standing.REFERENCE and judged.key not in self._problems:
            self._problems[judged.key] = judged
            self._progress(Event("reference", self.result.cases, judged))
        return judged

    def _first_failure_confirmed(self, judged: Judged, state: _Round) -> Judged:
        """A new failure found while generating counts only if it happens again."""
        if judged.standing is not Standing.FAILURE or judged.key in self._known:
            return judged
        mine = judged.consumer
        hang = mine is not None and killed_at_deadline(mine, judged.plan.deadline_ms)
        for _ in range(HANG_CONFIRMATIONS if hang else CONFIRMATIONS):
            again = self._run(judged.plan)
            if again.standing is not Standing.FAILURE or again.key != judged.key:
                self._progress(Event("flaky", self.result.cases, judged, round=state.index))
                return again if again.standing is not Standing.FAILURE else _passed(judged)
        return judged

    def _confirmed(self, judged: Judged, state: _Round) -> Found:
        """The shrunk failure, run once more; if it does not reproduce, the smallest of the
        shrink's failing plans that does, or else the first failure (which reproduced when it
        was found)."""
        candidates = [judged] + [j for j in reversed(state.failing) if j is not judged]
        chosen = state.failing[0] if state.failing else judged
        for candidate in candidates[:CONFIRM_TRIES]:
            again = self._run(candidate.plan)
            if again.standing is Standing.FAILURE and again.key == candidate.key:
                chosen = candidate
                break
        found = Found(
            judged=chosen,
            first=state.first or chosen.plan,
            cases_until=state.cases_until,
            shrink_steps=state.shrink_steps,
            seconds=time.monotonic() - self._started,
            reproduced=chosen is judged,
        )
        self._progress(
            Event("shrunk", self.result.cases, chosen, state.shrink_steps, round=state.index)
        )
        return found


def _passed(judged: Judged) -> Judged:
    """A failure that did not reproduce, counted as a pass."""
    return Judged(
        judged.plan,
        Standing.PASS,
        judged.reference,
        judged.consumer,
        judged.expect,
        effect=judged.effect,
    )
