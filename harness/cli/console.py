"""What ``tearline run`` prints: a progress bar while cases run, a summary table at the end."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.judging.results import OUTCOMES, CaseResult, Outcome, replay_command

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


def print_summary(console: Console, results: Sequence[CaseResult], elapsed_s: float) -> None:
    bad = [r for r in results if not r.passed]
    if bad:
        table = Table(title="cases that did not pass", show_lines=False, expand=False)
        for column in ("outcome", "case", "seed", "diagnosis"):
            table.add_column(column, overflow="fold")
        for r in bad[:MAX_LISTED]:
            table.add_row(
                f"[{STYLES[r.outcome]}]{r.outcome}[/]",
                escape(r.case_id),
                str(r.seed),
                escape(r.diagnosis),
            )
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
