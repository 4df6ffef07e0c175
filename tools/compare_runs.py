"""Compare two runs case by case: ``python tools/compare_runs.py OLD.json NEW.json``.

For a change that must not change behaviour (a restructuring): every case id of one run is in
the other, with the same outcome and the same consumer verdict, completeness and count of
accepted messages. Prints the differences and a count; exits 1 if there is any.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def facts(path: str) -> dict[str, tuple[Any, ...]]:
    cases = json.loads(Path(path).read_text(encoding="utf-8"))["cases"]
    return {case["id"]: _facts(case) for case in cases}


def _facts(case: dict[str, Any]) -> tuple[Any, ...]:
    seen = case.get("observed") or {}
    return (
        case["outcome"],
        seen.get("verdict"),
        seen.get("complete"),
        seen.get("accepted_messages"),
    )


def main(argv: list[str]) -> int:
    old, new = facts(argv[1]), facts(argv[2])
    differences = [f"only in {argv[1]}: {case}" for case in sorted(old.keys() - new.keys())]
    differences += [f"only in {argv[2]}: {case}" for case in sorted(new.keys() - old.keys())]
    for case in sorted(old.keys() & new.keys()):
        if old[case] != new[case]:
            differences.append(f"{case}: {old[case]} -> {new[case]}")
    print("\n".join(differences))
    same = len(old.keys() & new.keys()) - sum(1 for d in differences if not d.startswith("only"))
    print(f"{same} of {len(old)} cases identical (outcome, verdict, complete, accepted)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
