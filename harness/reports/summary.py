"""Facts about a run that every report shows the same way: totals, fault families, labels.

Kept in one place so the HTML page, ``results.json`` and ``junit.xml`` cannot disagree about how
many cases failed or what a case's fault family is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from harness.judging.results import OUTCOMES, CaseResult

NO_FAULT = "no fault"


def totals(results: Sequence[CaseResult]) -> dict[str, int]:
    """``{"cases": n, "pass": ..., "fail": ..., ...}``: every outcome present, zeros included."""
    counts = Counter(r.outcome for r in results)
    return {"cases": len(results), **{outcome: counts.get(outcome, 0) for outcome in OUTCOMES}}


def fault_family(result: CaseResult) -> str:
    """The matrix column of a case: its distinct fault kinds, sorted, joined with ``+``."""
    kinds = sorted(set(result.fault_kinds))
    return "+".join(kinds) if kinds else NO_FAULT


def observed_label(result: CaseResult) -> str:
    """What the consumer concluded, in the words ``expected`` uses; ``-`` without a report."""
    report = result.report
    if report is None:
        return "-"
    parts = [report.verdict]
    if report.error_code and report.error_code != report.verdict:
        parts.append(f"error {report.error_code}")
    parts.append(f"complete={report.complete}")
    return ", ".join(parts)


def is_failing(result: CaseResult) -> bool:
    """Anything but a pass counts as failing: inconclusive and error cases are never passes."""
    return not result.passed
