"""What ``tearline run`` prints: a progress bar while cases run, a summary table at the end."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.judging.results import GRADES, OUTCOMES, CaseResult, Grade, Outcome, replay_command

STYLES = {
    Outcome.PASS: "green",
    Outcome.FAIL: "red",
    Outcome.VIOLATION: "bold red",
    Outcome.NO_VERDICT: "magenta",
    Outcome.INCONCLUSIVE: "yellow",
    Outcome.ERROR: "bold yellow",
}
MAX_LISTED = 30


@contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Callable[[CaseResult], None]]:
    """A progress bar on a terminal; nothing on a pipe (CI logs stay readable)."""
    if not console.is_terminal:
        yield lambda result: None
        return
    bar = Progress(
        TextColumn("[bold]running"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
        transient=True,
    )
    with bar:
        task = bar.add_task("cases", total=total, last="")

        def advance(result: CaseResult) -> None:
            style = STYLES[result.outcome]
            bar.update(
                task, advance=1, last=f"[{style}]{result.outcome}[/] {escape(result.case_id)}"
            )

        yield advance


GRADE_STYLES = {
    Grade.STRICT: "green",
    Grade.NON_STRICT: "cyan",
    Grade.FAILED: "bold red",
    Grade.INFORMATIONAL: "blue",
}


def _listed_first(results: Sequence[CaseResult]) -> list[CaseResult]:
    """The cases to list: every one that is not ok, then the graded ones that did not pass
    strictly (a foreign consumer's non-strict and informational grades are worth a look)."""
    not_ok = [r for r in results if not r.ok]
    return not_ok + [r for r in results if r.ok and not r.passed]


def print_summary(console: Console, results: Sequence[CaseResult], elapsed_s: float) -> None:
    bad = _listed_first(results)
    graded = any(r.grade is not None for r in results)
    if bad:
        table = Table(title="cases that did not pass", show_lines=False, expand=False)
        columns = (
            ("outcome", "grade", "case", "seed", "diagnosis")
            if graded
            else ("outcome", "case", "seed", "diagnosis")
        )
        for column in columns:
            table.add_column(column, overflow="fold")
        for r in bad[:MAX_LISTED]:
            row = [f"[{STYLES[r.outcome]}]{r.outcome}[/]"]
            if graded:
                row.append(f"[{GRADE_STYLES[r.grade]}]{r.grade}[/]" if r.grade else "-")
            table.add_row(*row, escape(r.case_id), str(r.seed), escape(r.diagnosis))
        console.print(table)
        if len(bad) > MAX_LISTED:
            console.print(f"... and {len(bad) - MAX_LISTED} more (see the reports)")
        console.print(
            f"replay the first: [bold]{escape(replay_command(bad[0]))}[/]", soft_wrap=True
        )
    counts = Counter(r.outcome for r in results)
    totals = Table(title=f"{len(results)} cases in {elapsed_s:.1f} s")
    for outcome in OUTCOMES:
        totals.add_column(outcome, justify="right")
    totals.add_row(*(f"[{STYLES[o]}]{counts.get(o, 0)}[/]" for o in OUTCOMES))
    console.print(totals)
    if graded:
        grades = Counter(r.grade for r in results if r.grade is not None)
        table = Table(title="grades (a consumer other than the reference one)")
        for g in GRADES:
            table.add_column(g, justify="right")
        table.add_row(*(f"[{GRADE_STYLES[g]}]{grades.get(g, 0)}[/]" for g in GRADES))
        console.print(table)
    print_undetectable(console, results)


def print_undetectable(console: Console, results: Sequence[CaseResult]) -> None:
    """The faults no consumer of the link's protocol could see: a finding about the protocol,
    which the consumer was not held to."""
    blind = [r for r in results if r.undetectable]
    if not blind:
        return
    console.print(f"{len(blind)} case(s) with a fault no consumer of the protocol can see:")
    for r in blind[:MAX_LISTED]:
        for note in r.undetectable:
            console.print(f"  {escape(r.case_id)}: {escape(note)}", soft_wrap=True)
    if len(blind) > MAX_LISTED:
        console.print(f"  ... and {len(blind) - MAX_LISTED} more (see the reports)")
