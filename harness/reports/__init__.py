"""Reports of a run (``tearline run --report DIR``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from harness.runner import CaseResult


def write_reports(
    results: Sequence[CaseResult], directory: str, *, pcap: str, elapsed_s: float,
    command: Sequence[str],
) -> str:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rows = [
        {"case_id": r.case_id, "outcome": r.outcome, "diagnosis": r.diagnosis, "seed": r.seed}
        for r in results
    ]
    (out / "results.json").write_text(json.dumps({"cases": rows}, indent=1))
    return str(out)
